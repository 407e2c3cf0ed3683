//! `exec` and `attach` sessions (`ws` feature), as kube 5.0's `AttachedProcess`: the
//! Kubernetes remote-command channel protocol (`v4.channel.k8s.io`, `v5.channel.k8s.io`) over
//! a [`Connection`].
//!
//! Each binary message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 status (a
//! `Status` JSON once the process ends), 4 resize (a `{"Width":…,"Height":…}` JSON), and, in
//! v5 only, 255 close (`[255, channel]`: that channel reached EOF).

use crate::client::{Connection, WsMessage};
use futures::channel::{mpsc, oneshot};
use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube_core::subresource::AttachParams;
use kube_wasm_guest::{JoinError, JoinHandle, spawn_local};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, SimplexStream, WriteHalf};

const STDIN_CHANNEL: u8 = 0;
const STDOUT_CHANNEL: u8 = 1;
const STDERR_CHANNEL: u8 = 2;
const STATUS_CHANNEL: u8 = 3;
const RESIZE_CHANNEL: u8 = 4;
const CLOSE_CHANNEL: u8 = 255;

/// Default capacity of each stdin/stdout/stderr pipe, in bytes (kube's default).
const MAX_BUF_SIZE: usize = 1024;

/// The size of a terminal, sent on the resize channel as `{"Width":…,"Height":…}`, as kube's
/// `TerminalSize`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TerminalSize {
    /// Width of the terminal, in columns.
    pub width: u16,
    /// Height of the terminal, in rows.
    pub height: u16,
}

/// Why a remote command session failed, as kube's (unexported) `remote_command::Error`.
/// WebSocket failures carry the client's [`crate::Error`] where kube has a tungstenite error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Failed to read from stdin.
    #[error("failed to read from stdin: {0}")]
    ReadStdin(#[source] std::io::Error),
    /// Failed to send stdin data to the pod.
    #[error("failed to send a stdin data: {0}")]
    SendStdin(#[source] crate::Error),
    /// Failed to write to stdout.
    #[error("failed to write to stdout: {0}")]
    WriteStdout(#[source] std::io::Error),
    /// Failed to write to stderr.
    #[error("failed to write to stderr: {0}")]
    WriteStderr(#[source] std::io::Error),
    /// Failed to receive a WebSocket message from the server.
    #[error("failed to receive a WebSocket message: {0}")]
    ReceiveWebSocketMessage(#[source] crate::Error),
    /// The background task did not complete (it was aborted).
    #[error("failed to complete the background task: {0}")]
    Spawn(#[source] JoinError),
    /// Failed to send the close message.
    #[error("failed to send a WebSocket close message: {0}")]
    SendClose(#[source] crate::Error),
    /// Failed to deserialize the status object.
    #[error("failed to deserialize status object: {0}")]
    DeserializeStatus(#[source] serde_json::Error),
    /// Failed to send the status object (the receiver was dropped).
    #[error("failed to send status object")]
    SendStatus,
    /// Failed to serialize a `TerminalSize`.
    #[error("failed to serialize TerminalSize object: {0}")]
    SerializeTerminalSize(#[source] serde_json::Error),
    /// Failed to send a terminal size message.
    #[error("failed to send terminal size message: {0}")]
    SendTerminalSize(#[source] crate::Error),
    /// Resizing needs `tty`.
    #[error("failed to set terminal size, tty need to be true to resize the terminal")]
    TtyNeedToBeTrue,
}

/// A process attached in a container, by [`Api::exec`](crate::Api::exec) or
/// [`Api::attach`](crate::Api::attach), as kube's `AttachedProcess`: stdin, stdout and stderr
/// as tokio pipes (if the [`AttachParams`] asked for them), the `Status` the server sends when
/// the process ends, and a terminal size sender (with `tty`).
///
/// A background task relays between the pipes and the connection; dropping the
/// `AttachedProcess` aborts it and closes the connection.
pub struct AttachedProcess {
    has_stdin: bool,
    has_stdout: bool,
    has_stderr: bool,
    stdin_writer: Option<WriteHalf<SimplexStream>>,
    stdout_reader: Option<ReadHalf<SimplexStream>>,
    stderr_reader: Option<ReadHalf<SimplexStream>>,
    status_rx: Option<oneshot::Receiver<Status>>,
    terminal_resize_tx: Option<mpsc::Sender<TerminalSize>>,
    task: Option<JoinHandle<Result<(), Error>>>,
}

impl Drop for AttachedProcess {
    fn drop(&mut self) {
        self.abort();
    }
}

impl AttachedProcess {
    pub(crate) fn new(connection: Connection, ap: &AttachParams) -> Self {
        let (stdin_reader, stdin_writer) =
            tokio::io::simplex(ap.max_stdin_buf_size.unwrap_or(MAX_BUF_SIZE));
        let (stdout_reader, stdout_writer) = pipe(ap.stdout, ap.max_stdout_buf_size);
        let (stderr_reader, stderr_writer) = pipe(ap.stderr, ap.max_stderr_buf_size);
        let (status_tx, status_rx) = oneshot::channel();
        let (terminal_resize_tx, terminal_resize_rx) = if ap.tty {
            let (tx, rx) = mpsc::channel(10);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let task = spawn_local(message_loop(
            connection,
            stdin_reader,
            stdout_writer,
            stderr_writer,
            status_tx,
            terminal_resize_rx,
        ));
        Self {
            has_stdin: ap.stdin,
            has_stdout: ap.stdout,
            has_stderr: ap.stderr,
            stdin_writer: Some(stdin_writer),
            stdout_reader,
            stderr_reader,
            status_rx: Some(status_rx),
            terminal_resize_tx,
            task: Some(task),
        }
    }

    /// Writer to the process's stdin; `None` without `stdin` in the [`AttachParams`] or when
    /// taken before. Shutting it down (or dropping it) ends stdin: in v5 the server is told
    /// with a close-channel message, in v4 the whole connection is closed.
    pub fn stdin(&mut self) -> Option<WriteHalf<SimplexStream>> {
        if !self.has_stdin {
            return None;
        }
        self.stdin_writer.take()
    }

    /// Reader of the process's stdout; `None` without `stdout` or when taken before.
    pub fn stdout(&mut self) -> Option<ReadHalf<SimplexStream>> {
        if !self.has_stdout {
            return None;
        }
        self.stdout_reader.take()
    }

    /// Reader of the process's stderr; `None` without `stderr` or when taken before.
    pub fn stderr(&mut self) -> Option<ReadHalf<SimplexStream>> {
        if !self.has_stderr {
            return None;
        }
        self.stderr_reader.take()
    }

    /// Aborts the background task, closing the connection; [`join`](Self::join) then fails
    /// with `Spawn`.
    #[inline]
    pub fn abort(&self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }

    /// Waits for the session to end: ends stdin, drops the readers not taken (so a full
    /// pipe cannot block the task), and returns the task's result.
    ///
    /// # Errors
    /// The session's `Error`; `Spawn` if it was aborted.
    pub async fn join(mut self) -> Result<(), Error> {
        if let Some(stdin) = &mut self.stdin_writer {
            let _ = stdin.shutdown().await;
        }
        self.stdout_reader = None;
        self.stderr_reader = None;
        self.status_rx = None;
        self.terminal_resize_tx = None;
        match self.task.take() {
            Some(task) => task.await.unwrap_or_else(|e| Err(Error::Spawn(e))),
            None => Ok(()),
        }
    }

    /// A future of the `Status` the server sends on the status channel when the process
    /// ends (`Success`, or `Failure` with reason `NonZeroExitCode` and the exit code in its
    /// details); `None` if the session ended without one. `None` on a second call.
    pub fn take_status(&mut self) -> Option<impl Future<Output = Option<Status>> + use<>> {
        self.status_rx.take().map(|rx| rx.map(Result::ok))
    }

    /// A sender of terminal sizes, each sent on the resize channel; `None` without `tty` or
    /// when taken before.
    pub fn terminal_size(&mut self) -> Option<mpsc::Sender<TerminalSize>> {
        self.terminal_resize_tx.take()
    }
}

fn pipe(
    wanted: bool,
    capacity: Option<usize>,
) -> (
    Option<ReadHalf<SimplexStream>>,
    Option<WriteHalf<SimplexStream>>,
) {
    if !wanted {
        return (None, None);
    }
    let (reader, writer) = tokio::io::simplex(capacity.unwrap_or(MAX_BUF_SIZE));
    (Some(reader), Some(writer))
}

fn framed(channel: u8, payload: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(payload.len() + 1);
    message.push(channel);
    message.extend_from_slice(payload);
    message
}

async fn message_loop(
    mut connection: Connection,
    mut stdin: ReadHalf<SimplexStream>,
    mut stdout: Option<WriteHalf<SimplexStream>>,
    mut stderr: Option<WriteHalf<SimplexStream>>,
    status_tx: oneshot::Sender<Status>,
    mut terminal_size_rx: Option<mpsc::Receiver<TerminalSize>>,
) -> Result<(), Error> {
    let supports_stream_close = connection.supports_stream_close();
    let mut stdin_is_open = true;
    let mut buf = vec![0u8; MAX_BUF_SIZE];
    loop {
        let terminal_size_next = async {
            match terminal_size_rx.as_mut() {
                Some(rx) => rx.next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            message = connection.recv() => match message {
                Some(Ok(WsMessage::Binary(bin))) if bin.len() > 1 => match bin[0] {
                    STDOUT_CHANNEL => {
                        if let Some(stdout) = stdout.as_mut() {
                            stdout.write_all(&bin[1..]).await.map_err(Error::WriteStdout)?;
                        }
                    }
                    STDERR_CHANNEL => {
                        if let Some(stderr) = stderr.as_mut() {
                            stderr.write_all(&bin[1..]).await.map_err(Error::WriteStderr)?;
                        }
                    }
                    STATUS_CHANNEL => {
                        let status = serde_json::from_slice::<Status>(&bin[1..])
                            .map_err(Error::DeserializeStatus)?;
                        status_tx.send(status).map_err(|_| Error::SendStatus)?;
                        break;
                    }
                    // Nothing is received on stdin, resize or close.
                    _ => {}
                },
                // A lone channel byte (sent when a channel opens), or text: nothing to do.
                Some(Ok(_)) => {}
                Some(Err(err)) => return Err(Error::ReceiveWebSocketMessage(err)),
                None => break,
            },
            read = stdin.read(&mut buf), if stdin_is_open => match read {
                Ok(0) => {
                    if supports_stream_close {
                        connection
                            .send_binary(&[CLOSE_CHANNEL, STDIN_CHANNEL])
                            .await
                            .map_err(Error::SendStdin)?;
                    } else {
                        connection.close().await.map_err(Error::SendClose)?;
                    }
                    stdin_is_open = false;
                }
                Ok(n) => connection
                    .send_binary(&framed(STDIN_CHANNEL, &buf[..n]))
                    .await
                    .map_err(Error::SendStdin)?,
                Err(err) => return Err(Error::ReadStdin(err)),
            },
            size = terminal_size_next => match size {
                Some(size) => {
                    let json = serde_json::to_vec(&size).map_err(Error::SerializeTerminalSize)?;
                    connection
                        .send_binary(&framed(RESIZE_CHANNEL, &json))
                        .await
                        .map_err(Error::SendTerminalSize)?;
                }
                None => terminal_size_rx = None,
            },
        }
    }
    if let Some(mut stdout) = stdout {
        let _ = stdout.shutdown().await;
    }
    if let Some(mut stderr) = stderr {
        let _ = stderr.shutdown().await;
    }
    Ok(())
}
