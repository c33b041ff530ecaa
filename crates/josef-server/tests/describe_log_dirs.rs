//! DescribeLogDirs (api 35) over the wire: the size of every partition's log, its offset lag,
//! and the log dir filesystem's total and usable bytes (v4+).

use josef_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use josef_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use josef_protocol::ResponseBody;

mod common;
use common::{broker_with_topic, produce_records, Client};

async fn describe(
    c: &mut Client,
    version: i16,
    req: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    let ResponseBody::DescribeLogDirs(r) = c.call(version, req).await else {
        panic!("not a DescribeLogDirs response")
    };
    r
}

/// (partition, size, lag) of `topic` in the first log dir.
fn partitions(r: &DescribeLogDirsResponse, topic: &str) -> Vec<(i32, i64, i64)> {
    r.results[0]
        .topics
        .iter()
        .filter(|t| t.name.as_str() == topic)
        .flat_map(|t| t.partitions.iter())
        .map(|p| (p.partition_index, p.partition_size, p.offset_lag))
        .collect()
}

#[tokio::test]
async fn sizes_lag_and_filesystem_space_are_real() {
    let (dir, b, mut c) = broker_with_topic("sized", 2).await;
    let all = DescribeLogDirsRequest {
        topics: None,
        ..Default::default()
    };
    let empty = describe(&mut c, 4, all.clone()).await;
    assert_eq!(partitions(&empty, "sized"), vec![(0, 0, 0), (1, 0, 0)]);

    let batch = josef_log::testing::batch(0, 1_700_000_000_000, &[(None, Some(b"hello"))]).freeze();
    let size = batch.len() as i64;
    assert_eq!(
        produce_records(&mut c, 9, "sized", batch).await.error_code,
        0
    );

    let r = describe(&mut c, 4, all.clone()).await;
    assert_eq!(r.results.len(), 1);
    let d = &r.results[0];
    assert_eq!(d.error_code, 0);
    assert_eq!(d.log_dir.as_str(), dir.path().display().to_string());
    assert!(d.total_bytes > 0, "{}", d.total_bytes);
    assert!(
        d.usable_bytes > 0 && d.usable_bytes <= d.total_bytes,
        "{}",
        d.usable_bytes
    );
    // The leader's log holds the batch as written; the lag of a leader is 0.
    assert_eq!(partitions(&r, "sized"), vec![(0, size, 0), (1, 0, 0)]);

    // Asking for one partition answers that one only.
    let one = DescribeLogDirsRequest {
        topics: Some(vec![DescribableLogDirTopic {
            topic: "sized".into(),
            partitions: [0].into_iter().collect(),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let r = describe(&mut c, 4, one).await;
    assert_eq!(partitions(&r, "sized"), vec![(0, size, 0)]);
    assert_eq!(r.results[0].topics.len(), 1);

    // Before v4 there are no space fields on the wire: the older answer still has the sizes.
    let v1 = describe(&mut c, 1, all).await;
    assert_eq!(partitions(&v1, "sized"), vec![(0, size, 0), (1, 0, 0)]);
    b.shutdown().await;
}
