//! OffsetsForLeaderEpoch (api 23) over the wire on a single node: the end offset of the current
//! epoch is the LEO, an unknown partition and a stale current leader epoch get their errors.

use josef_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, ResponseBody};

mod common;
use common::{create_topic, produce_records, start_with, Client};

fn request(topic: &str, partition: i32, current: i32, epoch: i32) -> OffsetForLeaderEpochRequest {
    OffsetForLeaderEpochRequest {
        replica_id: -1,
        topics: vec![OffsetForLeaderTopic {
            topic: topic.into(),
            partitions: vec![OffsetForLeaderPartition {
                partition,
                current_leader_epoch: current,
                leader_epoch: epoch,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn ask(c: &mut Client, req: OffsetForLeaderEpochRequest) -> (i16, i32, i64) {
    let ResponseBody::OffsetForLeaderEpoch(r) = c.call(4, req).await else {
        panic!("not an OffsetForLeaderEpoch answer")
    };
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.leader_epoch, p.end_offset)
}

#[tokio::test]
async fn end_offset_of_the_current_epoch_is_the_log_end_offset() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "ofle", 1).await;
    let batch = josef_log::testing::batch(
        0,
        1_700_000_000_000,
        &[
            (None, Some(b"a".as_slice())),
            (None, Some(b"b".as_slice())),
            (None, Some(b"c".as_slice())),
        ],
    )
    .freeze();
    assert_eq!(
        produce_records(&mut c, 9, "ofle", batch).await.error_code,
        0
    );
    assert_eq!(ask(&mut c, request("ofle", 0, 0, 0)).await, (0, 0, 3));
    assert_eq!(
        ask(&mut c, request("ofle", 7, 0, 0)).await.0,
        ErrorCode::UnknownTopicOrPartition.code()
    );
    // A current leader epoch newer than the broker's: UNKNOWN_LEADER_EPOCH.
    assert_eq!(
        ask(&mut c, request("ofle", 0, 5, 0)).await.0,
        ErrorCode::UnknownLeaderEpoch.code()
    );
    b.shutdown().await;
}
