//! The value every coordinator handler returns: records to persist plus the response to release.

/// What a coordinator handler produces: the records that must be appended to the coordinator's
/// partition, and the response that may be released to the client once those records are durable.
///
/// Handlers never mutate the shard; the state changes only when the runtime replays `records`.
///
/// ```
/// use josef_coordinator::CoordinatorResult;
///
/// let r: CoordinatorResult<&str, u32> = CoordinatorResult::new(vec!["rec"], 7);
/// let r = r.map_response(|v| v * 2);
/// assert_eq!(r.records, vec!["rec"]);
/// assert_eq!(r.response, 14);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorResult<R, T> {
    /// Records to append to the coordinator partition, in order.
    pub records: Vec<R>,
    /// Response released once `records` are committed (high watermark past their last offset).
    pub response: T,
}

impl<R, T> CoordinatorResult<R, T> {
    /// A result with records and a response.
    pub fn new(records: Vec<R>, response: T) -> Self {
        Self { records, response }
    }

    /// A result with a response and no records.
    pub fn response_only(response: T) -> Self {
        Self {
            records: Vec::new(),
            response,
        }
    }

    /// Maps the response, keeping the records.
    pub fn map_response<U>(self, f: impl FnOnce(T) -> U) -> CoordinatorResult<R, U> {
        CoordinatorResult {
            records: self.records,
            response: f(self.response),
        }
    }

    /// Maps each record, keeping the response.
    pub fn map_records<Q>(self, f: impl FnMut(R) -> Q) -> CoordinatorResult<Q, T> {
        CoordinatorResult {
            records: self.records.into_iter().map(f).collect(),
            response: self.response,
        }
    }
}

impl<R, T: Default> CoordinatorResult<R, T> {
    /// A result with records and the default response (typically `()`), for timer or
    /// background operations that answer nobody.
    pub fn records_only(records: Vec<R>) -> Self {
        Self {
            records,
            response: T::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_build_expected_results() {
        let r: CoordinatorResult<u8, ()> = CoordinatorResult::records_only(vec![1, 2]);
        assert_eq!(r.records, vec![1, 2]);
        let r: CoordinatorResult<u8, &str> = CoordinatorResult::response_only("x");
        assert!(r.records.is_empty());
        let r = CoordinatorResult::new(vec![1u8], 1u8).map_records(|x| x as u32 + 1);
        assert_eq!(r.records, vec![2u32]);
    }
}
