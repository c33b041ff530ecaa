//! What a broker learns from the metadata log: replay the records a controller wrote (a topic with
//! two partitions on three brokers), see which replicas broker 2 leads and follows, then replay a
//! failover and see what changed for it — the decisions a broker's metadata publisher acts on.
//!
//! ```text
//! cargo run -p josef-metadata --example broker_view
//! ```

use std::io::Write;

use josef_metadata::{MetadataDelta, MetadataImage, MetadataProvenance, MetadataRecord};
use josef_protocol::metadata_records::{
    FenceBrokerRecord, PartitionChangeRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord,
    UnfenceBrokerRecord,
};
use josef_protocol::Uuid;

/// The records a controller commits for three brokers and a topic `orders` with two partitions.
fn initial_records(topic_id: Uuid) -> Vec<MetadataRecord> {
    let mut records = Vec::new();
    for id in 1..=3 {
        records.push(
            RegisterBrokerRecord {
                broker_id: id,
                broker_epoch: i64::from(id) * 10,
                ..Default::default()
            }
            .into(),
        );
        records.push(
            UnfenceBrokerRecord {
                id,
                epoch: i64::from(id) * 10,
                ..Default::default()
            }
            .into(),
        );
    }
    records.push(
        TopicRecord {
            name: "orders".into(),
            topic_id,
            ..Default::default()
        }
        .into(),
    );
    for (partition_id, replicas) in [(0, vec![1, 2, 3]), (1, vec![2, 3, 1])] {
        records.push(
            PartitionRecord {
                topic_id,
                partition_id,
                leader: replicas[0],
                leader_epoch: 0,
                partition_epoch: 0,
                isr: replicas.clone().into(),
                replicas: replicas.into(),
                ..Default::default()
            }
            .into(),
        );
    }
    records
}

/// Replays `records` (through their wire form, as a broker reads them) on top of `image`, prints
/// what they mean for broker 2 and returns the next image.
fn replay(
    image: &MetadataImage,
    records: &[MetadataRecord],
    offset: u64,
    out: &mut dyn Write,
) -> Result<MetadataImage, Box<dyn std::error::Error>> {
    let mut delta = MetadataDelta::new(image);
    for r in records {
        delta.replay(&MetadataRecord::decode(&r.encode()?)?)?;
    }
    let changes = delta.local_changes(2);
    let names = |ps: &[josef_metadata::LocalPartition]| {
        ps.iter()
            .map(|p| {
                format!(
                    "{}-{} (epoch {})",
                    p.topic_name, p.partition, p.registration.leader_epoch
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    writeln!(out, "broker 2 leads: [{}]", names(&changes.leaders))?;
    writeln!(out, "broker 2 follows: [{}]", names(&changes.followers))?;
    writeln!(
        out,
        "broker 2 newly elected: [{}]",
        names(&changes.elected_leaders)
    )?;
    Ok(delta.apply(MetadataProvenance {
        last_offset: offset,
        last_epoch: 1,
    }))
}

/// Runs the example, writing what broker 2 sees to `out`.
pub fn run(out: &mut dyn Write) -> Result<(), Box<dyn std::error::Error>> {
    let topic_id = Uuid::from_u128(7);
    let records = initial_records(topic_id);
    let image = replay(&MetadataImage::empty(), &records, records.len() as u64, out)?;
    writeln!(out, "active brokers: {}", image.alive_brokers().count())?;

    // Broker 1 misses its heartbeats: the controller fences it and moves orders-0's leadership
    // to the next replica in the ISR, with a new leader epoch.
    let failover: Vec<MetadataRecord> = vec![
        FenceBrokerRecord {
            id: 1,
            epoch: 10,
            ..Default::default()
        }
        .into(),
        PartitionChangeRecord {
            topic_id,
            partition_id: 0,
            leader: 2,
            isr: Some(vec![2, 3].into()),
            ..Default::default()
        }
        .into(),
    ];
    let offset = image.provenance().last_offset + failover.len() as u64;
    let image = replay(&image, &failover, offset, out)?;
    writeln!(out, "active brokers: {}", image.alive_brokers().count())?;
    let p0 = &image.topic_by_name("orders").ok_or("no topic")?.partitions[&0];
    writeln!(
        out,
        "orders-0: leader {} epoch {} isr {:?} at metadata offset {}",
        p0.leader,
        p0.leader_epoch,
        p0.isr,
        image.provenance().last_offset
    )?;
    Ok(())
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(&mut std::io::stdout())
}
