//! Responses held back until the records they depend on are committed.

use std::collections::VecDeque;

/// A queue of responses keyed by the offset that must be committed before each is released.
///
/// `push(offset, response)` holds `response` until the high watermark is *past* `offset`
/// (`high_watermark > offset`; Kafka's high watermark is the first offset not yet replicated).
/// Offsets are expected in non-decreasing order, as a single partition writer produces them;
/// an out-of-order push is still handled correctly (it is inserted in place).
///
/// ```
/// use josef_coordinator::DeferredResponses;
///
/// let mut q = DeferredResponses::new();
/// q.push(4, "a");
/// q.push(9, "b");
/// assert!(q.release(4).is_empty());       // offset 4 not yet below the HW
/// assert_eq!(q.release(5), vec!["a"]);
/// assert_eq!(q.fail_all(), vec!["b"]);    // leadership lost: answer with an error
/// ```
#[derive(Debug, Clone)]
pub struct DeferredResponses<T> {
    queue: VecDeque<(i64, T)>,
}

impl<T> Default for DeferredResponses<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> DeferredResponses<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Self {
            queue: VecDeque::new(),
        }
    }

    /// Holds `response` until the high watermark passes `offset`.
    pub fn push(&mut self, offset: i64, response: T) {
        match self.queue.back() {
            Some((last, _)) if *last > offset => {
                let at = self.queue.partition_point(|(o, _)| *o <= offset);
                self.queue.insert(at, (offset, response));
            }
            _ => self.queue.push_back((offset, response)),
        }
    }

    /// Removes and returns, in offset order, every response whose offset is below `high_watermark`.
    pub fn release(&mut self, high_watermark: i64) -> Vec<T> {
        let mut out = Vec::new();
        while let Some((offset, _)) = self.queue.front() {
            if *offset >= high_watermark {
                break;
            }
            out.push(self.queue.pop_front().expect("checked non-empty").1);
        }
        out
    }

    /// Removes and returns every held response (the partition was lost; answer them with errors).
    pub fn fail_all(&mut self) -> Vec<T> {
        self.queue.drain(..).map(|(_, t)| t).collect()
    }

    /// Number of held responses.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_order_push_is_released_in_offset_order() {
        let mut q = DeferredResponses::new();
        q.push(5, 'a');
        q.push(2, 'b');
        q.push(5, 'c');
        assert_eq!(q.release(3), vec!['b']);
        assert_eq!(q.release(6), vec!['a', 'c']);
        assert!(q.is_empty());
    }
}
