# Shell helpers shared by the scripts that provision and run the test infrastructure
# (control-plane.sh, registry.sh, cluster.sh): apt downloads unpacked without maintainer
# scripts, certificates signed by a local CA, and processes started detached, found by PID file
# and stopped by PID. Source it after defining
# `log`, `die`, `CACHE_ROOT` and `APT_LOG`.

# ---------------------------------------------------------------------------------------------
# apt
# ---------------------------------------------------------------------------------------------

# Runs apt-get quietly (output in $APT_LOG, shown on failure).
apt_quiet() {
  if ! apt-get -q -o Dpkg::Use-Pty=0 "$@" >>"$APT_LOG" 2>&1; then
    tail -n 20 "$APT_LOG" >&2
    return 1
  fi
}

# Runs an apt-get command; if it fails (e.g. stale or missing package lists), runs
# `apt-get update` once and retries.
apt_retry() {
  if ! apt_quiet "$@"; then
    log "apt-get $* failed; running apt-get update and retrying"
    apt_quiet update
    apt_quiet "$@"
  fi
}

# Installs the Debian packages providing the given commands (pairs of "command:package").
ensure_commands() {
  local pair missing=()
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
  done
  ((${#missing[@]} == 0)) && return 0
  [[ $(id -u) == 0 ]] || die "need root to install: ${missing[*]}"
  mkdir -p "$CACHE_ROOT"
  log "installing ${missing[*]} (apt log: $APT_LOG)"
  apt_retry install -y --no-install-recommends "${missing[@]}"
}

# Downloads binary packages into $1 and unpacks each with dpkg -x into $2 (no maintainer
# scripts run, so no services start).
unpack_debs() {
  local dl=$1 root=$2 deb
  shift 2
  mkdir -p "$dl" "$root"
  (cd "$dl" && apt_retry -o APT::Sandbox::User=root download "$@")
  for deb in "$dl"/*.deb; do dpkg -x "$deb" "$root"; done
}

# ---------------------------------------------------------------------------------------------
# Certificates
# ---------------------------------------------------------------------------------------------

# issue_cert CA OUT SUBJECT [SAN]: a private key OUT.key and a certificate OUT.crt signed by the
# CA whose key and certificate are CA.key and CA.crt, valid 30 days: for a client (TLS client
# authentication) if no SAN is given, else for a server with subjectAltName SAN
# (e.g. IP:10.0.0.1).
issue_cert() {
  local ca=$1 out=$2 subject=$3 san=${4:-} ext
  ext=$(mktemp)
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ -n $san ]]; then
      echo "extendedKeyUsage=serverAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  (umask 077; openssl genrsa -out "$out.key" 2048 2>/dev/null)
  openssl req -new -key "$out.key" -subj "$subject" 2>/dev/null \
    | openssl x509 -req -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -days 30 \
      -extfile "$ext" -out "$out.crt" 2>/dev/null
  rm -f "$ext"
  [[ -s $out.crt ]] || die "could not issue $out.crt"
}

# ---------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------

# True if the PID in pid file $1 is a live (non-zombie) process whose command line
# mentions $2 (the state dir), so a recycled PID is never mistaken for ours. A process in
# the middle of exec (spawn's child becoming the server) shows an empty command line for a
# moment: read again then.
pid_alive() {
  local pidfile=$1 marker=$2 pid state cmdline attempt
  [[ -f $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  for attempt in 1 2 3 4 5; do
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ $state != Z ]] || return 1
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ -n $cmdline ]] && break
    sleep 0.05
  done
  [[ $cmdline == *"$marker"* ]]
}

# Starts "$@" detached (own session, no terminal, stdin from /dev/null), logging to $2;
# the child writes its own PID to $1 before exec'ing.
spawn() {
  local pidfile=$1 logfile=$2
  shift 2
  rm -f "$pidfile"
  # shellcheck disable=SC2016 # $$ and $@ belong to the inner shell
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" </dev/null >"$logfile" 2>&1 &
  local i
  for ((i = 0; i < 50; i++)); do [[ -s $pidfile ]] && return 0; sleep 0.1; done
  die "could not start $1"
}

# Stops the process in pid file $1 (TERM, up to $4 seconds — 15 by default — then KILL). $3 is
# a display name.
stop_pid() {
  local pidfile=$1 marker=$2 name=$3 grace=${4:-15} pid i
  if ! pid_alive "$pidfile" "$marker"; then
    rm -f "$pidfile"
    return 0
  fi
  pid=$(<"$pidfile")
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    pid_alive "$pidfile" "$marker" || break
    sleep 0.1
  done
  if pid_alive "$pidfile" "$marker"; then
    log "$name did not exit after ${grace}s; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.2
  fi
  rm -f "$pidfile"
}

# Prints $1 distinct TCP ports that are currently free on 127.0.0.1, picked at random from
# 20000-32767 (below the kernel's ephemeral range, so outgoing connections never take them).
free_ports() {
  local n=$1
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$n" <<'PY'
import random, socket, sys
n, ports, socks = int(sys.argv[1]), [], []
while len(ports) < n:
    p = random.randint(20000, 32767)
    if p in ports:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        s.close()
        continue
    socks.append(s)
    ports.append(p)
print(" ".join(map(str, ports)))
PY
  else
    local ports=() p
    while ((${#ports[@]} < n)); do
      p=$((20000 + RANDOM % 12768))
      [[ " ${ports[*]} " == *" $p "* ]] && continue
      (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue  # something listens
      ports+=("$p")
    done
    echo "${ports[*]}"
  fi
}

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
