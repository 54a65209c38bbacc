//! Where a call's session runs: on the async worker that asked for it while it is short, moved
//! to tokio's blocking pool once it is not, and on the calling thread for synchronous callers.
//!
//! Why not always a blocking thread: handing a ~10 µs call to another thread and waking the
//! caller back costs about as much as the call again (strategy_call bench, two cores:
//! `Strategy::before_create` p50 26–55 µs under `spawn_blocking`, 19 µs started here). Why that
//! is still safe: a session started on a worker yields at its first epoch tick
//! (`instance::TICKS_ON_WORKER`, 1–2 ms), and its future, which owns the store, is moved to a
//! blocking thread to run on to its deadline there; so a looping guest holds a worker for one
//! slice at most. Modules that may block in host functions (`get`, `list`, `apply`) never start
//! on a worker.

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use super::error::{CallFailure, FailureKind};

/// A session's whole work (instantiation and its calls), owning its store.
pub type SessionFuture<T> = Pin<Box<dyn Future<Output = Result<T, CallFailure>> + Send>>;

/// Runs `session` on this async worker; if it yields (its first epoch tick came), finishes it on
/// a blocking thread.
pub async fn inline_first<T: Send + 'static>(
    mut session: SessionFuture<T>,
) -> Result<T, CallFailure> {
    // One poll with this task's context: a yield wakes the task, which is harmless.
    let first = std::future::poll_fn(|cx| Poll::Ready(session.as_mut().poll(cx))).await;
    match first {
        Poll::Ready(out) => out,
        Poll::Pending => on_blocking_thread(session).await,
    }
}

/// Runs `session` on tokio's blocking pool.
pub async fn on_blocking_thread<T: Send + 'static>(
    session: SessionFuture<T>,
) -> Result<T, CallFailure> {
    tokio::task::spawn_blocking(move || block_here(session))
        .await
        .unwrap_or_else(|e| {
            Err(CallFailure::new(
                FailureKind::Host,
                format!("the call's worker failed: {e}"),
            ))
        })
}

/// Runs a session future to completion on the calling thread. Off a worker a session never
/// yields (nothing it awaits is pending), so this is one poll; the parking loop is for
/// correctness, not expected use. Not `futures::executor::block_on`: that refuses to nest, and a
/// host function's `apply` can run a nested call on this thread.
pub(crate) fn block_here<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            Poll::Pending => thread::park(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::thread::ThreadId;

    use super::*;

    /// Pending once (waking itself, as wasmtime's epoch yield does), then done: answers the
    /// thread it finished on.
    struct YieldOnce(bool);

    impl Future for YieldOnce {
        type Output = Result<ThreadId, CallFailure>;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            if std::mem::replace(&mut self.0, true) {
                return Poll::Ready(Ok(thread::current().id()));
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_session_that_yields_finishes_on_a_blocking_thread() {
        let finished_on = inline_first(Box::pin(YieldOnce(false))).await.unwrap();
        assert_ne!(finished_on, thread::current().id());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_session_that_does_not_yield_finishes_on_the_worker() {
        let session = Box::pin(async { Ok(thread::current().id()) });
        assert_eq!(inline_first(session).await.unwrap(), thread::current().id());
    }

    #[test]
    fn block_here_waits_out_a_pending_future() {
        assert_eq!(
            block_here(YieldOnce(false)).unwrap(),
            thread::current().id()
        );
    }
}
