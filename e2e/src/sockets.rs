//! A process's TCP connections, read from `/proc`: how many it holds to the API server.

/// The test control plane's kube-apiserver port (`APISERVER_PORT`, which `scripts/test.sh`
/// exports from the control plane's env file).
pub fn apiserver_port() -> u16 {
    let port = std::env::var("APISERVER_PORT")
        .expect("APISERVER_PORT is set (scripts/test.sh exports the control plane's env)");
    port.parse()
        .unwrap_or_else(|_| panic!("APISERVER_PORT {port:?} is not a port"))
}

/// Established TCP connections of process `pid` to remote port `port` (IPv4 and IPv6):
/// its socket inodes (`/proc/<pid>/fd`) matched against `/proc/<pid>/net/tcp{,6}`.
///
/// # Errors
/// If the process's folders cannot be read (it has exited).
pub fn established_to(pid: u32, port: u16) -> std::io::Result<usize> {
    let mut inodes = std::collections::HashSet::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        let Ok(target) = std::fs::read_link(fd?.path()) else {
            continue;
        };
        let target = target.to_string_lossy();
        if let Some(inode) = target
            .strip_prefix("socket:[")
            .and_then(|rest| rest.strip_suffix(']'))
        {
            inodes.insert(inode.to_owned());
        }
    }
    let mut count = 0;
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}"))?;
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(remote), Some(state), Some(inode)) =
                (fields.get(2), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let remote_port = remote
                .rsplit(':')
                .next()
                .and_then(|hex| u16::from_str_radix(hex, 16).ok());
            // State 01 is ESTABLISHED.
            if remote_port == Some(port) && *state == "01" && inodes.contains(*inode) {
                count += 1;
            }
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_of_this_process_is_counted_by_its_remote_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let before = established_to(std::process::id(), port).expect("own /proc");
        let _client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let (_server, _) = listener.accept().expect("accept");
        assert_eq!(before, 0);
        assert_eq!(
            established_to(std::process::id(), port).expect("own /proc"),
            1
        );
    }
}
