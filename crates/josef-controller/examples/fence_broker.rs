//! The KRaft controller as a state machine: it registers three brokers, creates `orders`
//! (2 partitions, 3 replicas), then broker sessions run out for the leader of `orders-0`; the
//! periodic tick fences it and elects a new leader from the ISR. Every batch is "committed" at
//! once (metadata offset + 1 per batch) and replayed, as the driver does after Raft commits it.
//!
//! ```text
//! cargo run -p josef-controller --example fence_broker
//! ```

use std::io::{self, Write};

use josef_controller::{Controller, ControllerConfig, ControllerResult, WriteContext};
use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::{
    BrokerHeartbeatRequest, BrokerRegistrationRequest, CreateTopicsRequest,
};
use josef_protocol::Uuid;

/// The controller plus the committed metadata log.
struct Quorum {
    controller: Controller,
    offset: u64,
    now_ms: i64,
}

impl Quorum {
    fn ctx(&self) -> WriteContext {
        WriteContext {
            now_ms: self.now_ms,
            next_offset: self.offset + 1,
        }
    }

    /// Commits the result's batch, replays it, prints its records, returns the response.
    fn commit<T>(
        &mut self,
        out: &mut dyn Write,
        r: ControllerResult<T>,
    ) -> Result<T, Box<dyn std::error::Error>> {
        if !r.records.is_empty() {
            self.offset += 1;
            for record in &r.records {
                self.controller.replay(self.offset, record)?;
                let name = format!("{record:?}");
                writeln!(
                    out,
                    "  @{} {}",
                    self.offset,
                    name.split(['(', ' ']).next().unwrap_or("?")
                )?;
            }
        }
        Ok(r.response)
    }

    fn heartbeat(
        &mut self,
        out: &mut dyn Write,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<bool, Box<dyn std::error::Error>> {
        let req = BrokerHeartbeatRequest {
            broker_id,
            broker_epoch,
            current_metadata_offset: self.offset as i64,
            ..Default::default()
        };
        let r = self.controller.broker_heartbeat(self.ctx(), &req);
        Ok(self.commit(out, r)?.is_fenced)
    }

    fn show(&self, out: &mut dyn Write, topic: &str) -> Result<(), Box<dyn std::error::Error>> {
        for (index, p) in &self.controller.topic(topic).ok_or("no topic")?.partitions {
            writeln!(
                out,
                "{topic}-{index}: leader {} epoch {} isr {:?} replicas {:?}",
                p.leader, p.leader_epoch, p.isr, p.replicas
            )?;
        }
        Ok(())
    }
}

/// Runs the scenario.
pub fn run(out: &mut dyn Write) -> Result<(), Box<dyn std::error::Error>> {
    let config = ControllerConfig {
        node_id: 100,
        seed: 42,
        ..Default::default()
    };
    let mut q = Quorum {
        controller: Controller::new(config),
        offset: 0,
        now_ms: 0,
    };
    writeln!(out, "activate (bootstrap batch)")?;
    let r = q.controller.activate(q.ctx(), 1, "example-cluster".into());
    q.commit(out, r)?;

    let mut epochs = Vec::new();
    for id in 1..=3 {
        writeln!(out, "broker {id} registers and heartbeats")?;
        let req = BrokerRegistrationRequest {
            broker_id: id,
            cluster_id: "example-cluster".into(),
            incarnation_id: Uuid::from_u128(id as u128),
            ..Default::default()
        };
        let r = q.controller.register_broker(q.ctx(), &req);
        let epoch = q.commit(out, r)?.broker_epoch;
        let fenced = q.heartbeat(out, id, epoch)?;
        writeln!(out, "  broker {id}: epoch {epoch}, fenced {fenced}")?;
        epochs.push((id, epoch));
    }

    writeln!(
        out,
        "CreateTopics orders (2 partitions, replication factor 3)"
    )?;
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "orders".into(),
            num_partitions: 2,
            replication_factor: 3,
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = q.controller.create_topics(q.ctx(), &req, 7);
    let created = q.commit(out, r)?;
    writeln!(out, "  error code {}", created.topics[0].error_code)?;
    q.show(out, "orders")?;

    let victim = q.controller.topic("orders").ok_or("no topic")?.partitions[&0].leader;
    writeln!(
        out,
        "broker {victim} stops heartbeating; the others go on for 10 s"
    )?;
    for _ in 0..2 {
        q.now_ms += 5_000;
        for &(id, epoch) in epochs.iter().filter(|(id, _)| *id != victim) {
            q.heartbeat(out, id, epoch)?;
        }
    }
    writeln!(out, "tick at {} ms", q.now_ms)?;
    let r = q.controller.tick(q.ctx());
    q.commit(out, r)?;
    let info = q.controller.broker(victim).ok_or("no broker")?;
    writeln!(out, "broker {victim} fenced: {}", info.fenced)?;
    q.show(out, "orders")?;
    let image = q.controller.image();
    writeln!(
        out,
        "metadata image at offset {}: {} active broker(s)",
        q.offset,
        (1..=3).filter(|id| image.is_active(*id)).count()
    )?;
    Ok(())
}

#[allow(dead_code)] // the tests include this file for `run`
fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(&mut io::stdout())
}
