// tokio: a controller serving metrics / health probes on its own listener.
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let listener = TcpListener::bind("0.0.0.0:8080").await?;
    let (mut socket, _) = listener.accept().await?;
    socket.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await?;
    let _upstream = TcpStream::connect(("example.com", 80)).await?;
    Ok(())
}
