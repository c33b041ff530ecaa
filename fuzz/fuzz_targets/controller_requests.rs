//! Kafka request frames from arbitrary bytes, fed to an active `josef_controller::Controller`
//! (three registered, unfenced brokers to start with) as its driver would: every batch a handler
//! returns commits at once and is replayed, so the state advances from request to request; time
//! moves and `tick` runs between steps; a step may fail the controller over. Nothing may panic, a
//! batch the controller wrote must replay, and `check_consistency` must hold after every step.
//!
//! Input: steps of `advance: u8 | frame length: u16 BE | request frame (no size prefix)`;
//! `advance` 255 is a failover (deactivate, activate at the next epoch), otherwise the clock moves
//! `advance * 50` ms first.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../common/controller_harness.rs"]
mod controller_harness;

use controller_harness::Harness;

fuzz_target!(|input: &[u8]| {
    let mut h = Harness::new();
    let mut data = input;
    let mut steps = 0;
    while data.len() >= 3 && steps < 64 {
        steps += 1;
        let advance = data[0];
        let len = usize::from(u16::from_be_bytes([data[1], data[2]])).min(data.len() - 3);
        let frame = &data[3..3 + len];
        data = &data[3 + len..];
        h.advance(advance);
        h.request(frame);
        if let Err(e) = h.c.check_consistency() {
            panic!("controller inconsistent after step {steps}: {e}");
        }
    }
    let _ = h.c.next_deadline_ms();
    let _ = h.c.image();
});
