//! Port forwarding (`ws` feature), as kube 5.0's `Portforwarder`: the Kubernetes portforward
//! protocol over a [`Connection`].
//!
//! Port `i` of the request uses channel `2i` for data and `2i + 1` for errors. The first
//! message on each channel is the port number, 2 bytes little-endian; an error channel
//! carries at most one UTF-8 message, after which the port is unusable.

use std::collections::HashMap;

use crate::client::{Connection, WsMessage, WsSender};
use futures::channel::{mpsc, oneshot};
use futures::{FutureExt, SinkExt, StreamExt, future};
use kube_wasm_guest::{JoinError, JoinHandle, spawn_local};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};

/// Capacity of each port's in-memory pipe, in bytes (kube's).
const PORT_BUF_SIZE: usize = 1024 * 1024;
/// Largest chunk read from a port's pipe into one message, in bytes.
const READ_CHUNK: usize = 4096;

/// Why port forwarding failed, as kube's (unexported) `portforward::Error`. WebSocket
/// failures carry the client's [`crate::Error`] where kube has a tungstenite error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A message on a channel that no requested port has.
    #[error("received invalid channel {0}")]
    InvalidChannel(usize),
    /// The first message of a channel was not a 2-byte port number.
    #[error("received initial frame with invalid size")]
    InvalidInitialFrameSize,
    /// The first message of a channel named another port.
    #[error("invalid port mapping in initial frame, got {actual}, expected {expected}")]
    InvalidPortMapping {
        /// The port the server named.
        actual: u16,
        /// The port requested for that channel.
        expected: u16,
    },
    /// Failed to hand bytes from the pod to the relay.
    #[error("failed to forward bytes from Pod: {0}")]
    ForwardFromPod(#[source] mpsc::SendError),
    /// Failed to hand bytes for the pod to the relay.
    #[error("failed to forward bytes to Pod: {0}")]
    ForwardToPod(#[source] mpsc::SendError),
    /// Failed to write bytes from the pod into the port's stream.
    #[error("failed to write bytes from Pod: {0}")]
    WriteBytesFromPod(#[source] std::io::Error),
    /// Failed to read bytes to send to the pod from the port's stream.
    #[error("failed to read bytes to send to Pod: {0}")]
    ReadBytesToSend(#[source] std::io::Error),
    /// An error channel carried bytes that are not UTF-8.
    #[error("received invalid error message from Pod: {0}")]
    InvalidErrorMessage(#[source] std::string::FromUtf8Error),
    /// The error receiver was dropped.
    #[error("failed to forward an error message {0:?}")]
    ForwardErrorMessage(String),
    /// Failed to send a WebSocket message.
    #[error("failed to send a WebSocket message: {0}")]
    SendWebSocketMessage(#[source] crate::Error),
    /// Failed to receive a WebSocket message.
    #[error("failed to receive a WebSocket message: {0}")]
    ReceiveWebSocketMessage(#[source] crate::Error),
    /// The background task did not complete (it was aborted).
    #[error("failed to complete the background task: {0}")]
    Spawn(#[source] JoinError),
    /// Failed to shut down the write side of a port's stream.
    #[error("failed to shutdown write to Pod channel: {0}")]
    Shutdown(#[source] std::io::Error),
}

/// Forwarded ports of a pod, from [`Api::portforward`](crate::Api::portforward), as kube's
/// `Portforwarder`: one in-memory [`DuplexStream`] per port (bytes written go to the pod's
/// port, bytes read come from it) and one error future per port.
pub struct Portforwarder {
    ports: HashMap<u16, DuplexStream>,
    errors: HashMap<u16, oneshot::Receiver<String>>,
    task: JoinHandle<Result<(), Error>>,
}

impl Portforwarder {
    pub(crate) fn new(connection: Connection, port_nums: &[u16]) -> Self {
        let mut ports = HashMap::with_capacity(port_nums.len());
        let mut errors = HashMap::with_capacity(port_nums.len());
        let mut error_txs = Vec::with_capacity(port_nums.len());
        let mut task_ios = Vec::with_capacity(port_nums.len());
        for port in port_nums {
            let (user, task_side) = tokio::io::duplex(PORT_BUF_SIZE);
            ports.insert(*port, user);
            task_ios.push(task_side);
            let (tx, rx) = oneshot::channel();
            errors.insert(*port, rx);
            error_txs.push(Some(tx));
        }
        let task = spawn_local(message_loop(
            connection,
            port_nums.to_vec(),
            task_ios,
            error_txs,
        ));
        Self {
            ports,
            errors,
            task,
        }
    }

    /// Takes the stream of `port`; `None` if it was not requested or already taken.
    #[inline]
    pub fn take_stream(&mut self, port: u16) -> Option<DuplexStream> {
        self.ports.remove(&port)
    }

    /// Takes a future of the error message the server sends for `port` (e.g. nothing
    /// listening there); it resolves to `None` if the session ends without one. `None` if
    /// the port was not requested or the future was taken before.
    #[inline]
    pub fn take_error(
        &mut self,
        port: u16,
    ) -> Option<impl Future<Output = Option<String>> + use<>> {
        self.errors.remove(&port).map(|rx| rx.map(Result::ok))
    }

    /// Aborts the background task, closing the connection.
    #[inline]
    pub fn abort(&self) {
        self.task.abort();
    }

    /// Waits for forwarding to end: streams not taken are dropped first (they would keep
    /// the connection open), then the task's result is returned. It ends once every port's
    /// stream has been shut down or dropped and the connection has closed.
    ///
    /// # Errors
    /// The session's `Error`; `Spawn` if it was aborted.
    pub async fn join(self) -> Result<(), Error> {
        let Self {
            mut ports,
            mut errors,
            task,
        } = self;
        ports.clear();
        errors.clear();
        task.await.unwrap_or_else(|e| Err(Error::Spawn(e)))
    }
}

/// What the loops tell the relay.
enum Message {
    FromPod(u8, Vec<u8>),
    ToPod(u8, Vec<u8>),
    FromPodClose,
    ToPodClose(u8),
}

async fn message_loop(
    connection: Connection,
    ports: Vec<u16>,
    duplexes: Vec<DuplexStream>,
    error_senders: Vec<Option<oneshot::Sender<String>>>,
) -> Result<(), Error> {
    let (sender, receiver) = mpsc::channel::<Message>(1);
    let mut writers = Vec::with_capacity(ports.len());
    let mut loops = Vec::with_capacity(ports.len() + 1);
    for (i, (reader, writer)) in duplexes.into_iter().map(tokio::io::split).enumerate() {
        writers.push(writer);
        let channel = u8::try_from(2 * i).unwrap_or(u8::MAX);
        loops.push(to_pod_loop(channel, reader, sender.clone()).boxed_local());
    }
    let ws_sender = connection.sender();
    loops.push(from_pod_loop(connection, sender).boxed_local());
    loops.push(forwarder_loop(&ports, receiver, ws_sender, writers, error_senders).boxed_local());
    future::try_join_all(loops).await.map(|_| ())
}

async fn to_pod_loop(
    channel: u8,
    mut reader: ReadHalf<DuplexStream>,
    mut sender: mpsc::Sender<Message>,
) -> Result<(), Error> {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let n = reader
            .read(&mut buf)
            .await
            .map_err(Error::ReadBytesToSend)?;
        if n == 0 {
            break;
        }
        sender
            .send(Message::ToPod(channel, buf[..n].to_vec()))
            .await
            .map_err(Error::ForwardToPod)?;
    }
    sender
        .send(Message::ToPodClose(channel))
        .await
        .map_err(Error::ForwardToPod)
}

/// Receives from the connection until it closes. (Sending is the forwarder's, through a
/// [`WsSender`].)
async fn from_pod_loop(
    mut connection: Connection,
    mut sender: mpsc::Sender<Message>,
) -> Result<(), Error> {
    while let Some(message) = connection.recv().await {
        match message.map_err(Error::ReceiveWebSocketMessage)? {
            WsMessage::Binary(mut bytes) if bytes.len() > 1 => {
                let payload = bytes.split_off(1);
                sender
                    .send(Message::FromPod(bytes[0], payload))
                    .await
                    .map_err(Error::ForwardFromPod)?;
            }
            _ => {}
        }
    }
    sender
        .send(Message::FromPodClose)
        .await
        .map_err(Error::ForwardFromPod)
}

#[derive(Default, Clone)]
struct ChannelState {
    initialized: bool,
    shutdown: bool,
}

async fn forwarder_loop(
    ports: &[u16],
    mut receiver: mpsc::Receiver<Message>,
    ws_sender: WsSender,
    mut writers: Vec<WriteHalf<DuplexStream>>,
    mut error_senders: Vec<Option<oneshot::Sender<String>>>,
) -> Result<(), Error> {
    let mut channels = vec![ChannelState::default(); 2 * ports.len()];
    let mut closed_ports = 0;
    let mut socket_shutdown = false;
    while let Some(message) = receiver.next().await {
        match message {
            Message::FromPod(ch, bytes) => {
                let ch = usize::from(ch);
                let channel = channels.get_mut(ch).ok_or(Error::InvalidChannel(ch))?;
                let port_index = ch / 2;
                if !channel.initialized {
                    let [lo, hi] = bytes[..] else {
                        return Err(Error::InvalidInitialFrameSize);
                    };
                    let port = u16::from_le_bytes([lo, hi]);
                    if port != ports[port_index] {
                        return Err(Error::InvalidPortMapping {
                            actual: port,
                            expected: ports[port_index],
                        });
                    }
                    channel.initialized = true;
                    continue;
                }
                if ch % 2 == 1 {
                    if let Some(sender) = error_senders[port_index].take() {
                        let text = String::from_utf8(bytes).map_err(Error::InvalidErrorMessage)?;
                        sender.send(text).map_err(Error::ForwardErrorMessage)?;
                    }
                } else if !channel.shutdown {
                    writers[port_index]
                        .write_all(&bytes)
                        .await
                        .map_err(Error::WriteBytesFromPod)?;
                }
            }
            Message::ToPod(ch, bytes) => {
                let mut bin = Vec::with_capacity(bytes.len() + 1);
                bin.push(ch);
                bin.extend_from_slice(&bytes);
                ws_sender
                    .send_binary(&bin)
                    .await
                    .map_err(Error::SendWebSocketMessage)?;
            }
            Message::ToPodClose(ch) => {
                let ch = usize::from(ch);
                let channel = channels.get_mut(ch).ok_or(Error::InvalidChannel(ch))?;
                if !channel.shutdown {
                    writers[ch / 2].shutdown().await.map_err(Error::Shutdown)?;
                    channel.shutdown = true;
                    closed_ports += 1;
                }
            }
            Message::FromPodClose => {
                for writer in &mut writers {
                    writer.shutdown().await.map_err(Error::Shutdown)?;
                }
            }
        }
        if closed_ports == ports.len() && !socket_shutdown {
            ws_sender
                .close()
                .await
                .map_err(Error::SendWebSocketMessage)?;
            socket_shutdown = true;
        }
    }
    Ok(())
}
