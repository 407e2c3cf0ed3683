//! The tokio calls controllers make, as tokio 1.x code.

use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{
    Barrier, Mutex, Notify, OnceCell, RwLock, Semaphore, broadcast, mpsc, oneshot, watch,
};
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior, interval, sleep, sleep_until, timeout};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let shared = Arc::new(Mutex::new(0u32));
    let state = Arc::new(RwLock::new(String::new()));
    let handle = tokio::spawn({
        let shared = shared.clone();
        async move {
            *shared.lock().await += 1;
            7u32
        }
    });
    let _: u32 = handle.await?;
    state.write().await.push('x');
    let _ = state.read().await.len();

    let (tx, mut rx) = mpsc::channel::<u32>(8);
    let (utx, mut urx) = mpsc::unbounded_channel::<u32>();
    let (otx, orx) = oneshot::channel::<u32>();
    let (wtx, mut wrx) = watch::channel(0u32);
    let (btx, mut brx) = broadcast::channel::<u32>(8);
    let notify = Arc::new(Notify::new());
    let semaphore = Arc::new(Semaphore::new(2));
    tx.send(1).await?;
    utx.send(2)?;
    let _ = otx.send(3);
    wtx.send(4)?;
    btx.send(5)?;
    notify.notify_one();
    let _permit = semaphore.clone().acquire_owned().await?;

    let mut ticker = interval(Duration::from_millis(10));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let started = Instant::now();
    tokio::select! {
        Some(n) = rx.recv() => { let _ = n; }
        Some(n) = urx.recv() => { let _ = n; }
        Ok(()) = wrx.changed() => { let _ = *wrx.borrow_and_update(); }
        Ok(n) = brx.recv() => { let _ = n; }
        _ = notify.notified() => {}
        _ = ticker.tick() => {}
        _ = sleep(Duration::from_millis(5)) => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    let (a, b) = tokio::join!(orx, sleep_until(started + Duration::from_millis(1)));
    let _ = (a?, b);
    let _ = tokio::try_join!(async { Ok::<_, anyhow::Error>(1) }, async { Ok(2) })?;
    let _ = timeout(Duration::from_secs(1), async { 1 }).await?;
    let _ = started.elapsed();

    let tasks: Vec<_> = (0..3u32).map(|i| tokio::spawn(async move { i })).collect();
    for task in tasks {
        let _: u32 = task.await?;
    }
    tokio::task::yield_now().await;

    let mut set = JoinSet::new();
    for i in 0..3u32 {
        set.spawn(async move { i });
    }
    let abort = set.spawn(std::future::pending::<u32>());
    abort.abort();
    set.spawn_local(async { 9 });
    let _: usize = set.len();
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(n) => {
                let _: u32 = n;
            }
            Err(e) if e.is_cancelled() => {}
            Err(e) => return Err(e.into()),
        }
    }
    let _ = set.try_join_next();
    set.abort_all();
    set.shutdown().await;
    set.detach_all();
    let _ = set.is_empty();
    let all: Vec<u32> = (0..2u32)
        .map(|i| async move { i })
        .collect::<JoinSet<_>>()
        .join_all()
        .await;
    let _ = all;
    let _: u64 = tokio::task::spawn_blocking(|| 1u64).await?;

    let barrier = Arc::new(Barrier::new(1));
    let _ = barrier.wait().await.is_leader();
    static ONCE: OnceCell<String> = OnceCell::const_new();
    let _: &String = ONCE.get_or_init(|| async { "x".to_owned() }).await;

    let sleep = sleep(Duration::from_millis(50));
    tokio::pin!(sleep);
    sleep
        .as_mut()
        .reset(Instant::now() + Duration::from_millis(1));
    let (mut client, mut server) = tokio::io::duplex(64);
    tokio::select! {
        biased;
        _ = &mut sleep => {}
        written = client.write_all(b"ping") => { written?; }
    }
    let mut buf = [0u8; 4];
    let _ = timeout(Duration::from_millis(5), server.read_exact(&mut buf)).await;
    let _ = tokio::runtime::Handle::current();
    let mut stdout = tokio::io::stdout();
    stdout.write_all(b"surface: tokio\n").await?;
    stdout.flush().await?;
    tokio::io::stderr().write_all(b"").await?;
    let _: tokio::io::Stdin = tokio::io::stdin();
    Ok(())
}
