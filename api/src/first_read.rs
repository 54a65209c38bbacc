//! `FirstReadDeadline`: a connection that must send its first bytes within a deadline.
//!
//! hyper's `header_read_timeout` bounds a request's headers once hyper reads them, but the
//! automatic HTTP/1.1-or-HTTP/2 choice reads the first bytes before that, with no deadline: a
//! peer that connects and sends nothing would hold its connection (and a file descriptor)
//! forever. Wrapping the connection's IO gives that first read the same deadline.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// `inner`, whose reads fail with `TimedOut` when nothing arrived before the deadline; once
/// anything arrived, an ordinary connection.
pub(crate) struct FirstReadDeadline<S> {
    inner: S,
    /// Disarmed (`None`) once the first bytes arrived.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> FirstReadDeadline<S> {
    /// `inner`, which must send its first bytes within `timeout`.
    pub(crate) fn new(inner: S, timeout: Duration) -> Self {
        Self {
            inner,
            deadline: Some(Box::pin(tokio::time::sleep(timeout))),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for FirstReadDeadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Some(deadline) = &mut self.deadline {
            match &read {
                Poll::Ready(Ok(())) if buf.filled().len() > before => self.deadline = None,
                Poll::Pending if deadline.as_mut().poll(cx).is_ready() => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client sent nothing in time",
                    )));
                }
                _ => {}
            }
        }
        read
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FirstReadDeadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn a_silent_peer_times_out_and_a_talking_one_never_does() {
        let (silent, _held) = tokio::io::duplex(64);
        let mut conn = FirstReadDeadline::new(silent, Duration::from_millis(50));
        let err = conn.read(&mut [0; 8]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);

        let (talking, mut peer) = tokio::io::duplex(64);
        let mut conn = FirstReadDeadline::new(talking, Duration::from_millis(50));
        peer.write_all(b"GET").await.unwrap();
        assert_eq!(conn.read(&mut [0; 8]).await.unwrap(), 3);
        // Later silences are hyper's business (its header and idle timeouts), not this one's.
        let later = tokio::time::timeout(Duration::from_millis(300), conn.read(&mut [0; 8])).await;
        assert!(later.is_err(), "still waiting past the deadline");
    }
}
