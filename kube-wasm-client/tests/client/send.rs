//! Compile-time checks: the public futures and streams are `Send` (and `'static` where
//! they own their inputs), so they can be spawned as with kube.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube_wasm_client::api::{
    Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams, WatchParams,
};
use kube_wasm_client::discovery::{self, Discovery};
use kube_wasm_client::{Client, Config};
use std::future::Future;

fn assert_send<T: Send>(_: &T) {}
fn assert_sync<T: Sync>(_: &T) {}
fn assert_spawnable<F: Future + Send + 'static>(_: F)
where
    F::Output: Send + 'static,
{
}

#[allow(dead_code, clippy::let_underscore_future)]
fn public_futures_and_streams_are_send(client: Client, api: Api<ConfigMap>, pods: Api<Pod>) {
    assert_send(&client);
    assert_sync(&client);
    assert_send(&api);
    assert_sync(&api);

    let cm = ConfigMap::default();
    let patch = Patch::Merge(serde_json::json!({}));
    assert_send(&api.get("x"));
    assert_send(&api.get_opt("x"));
    assert_send(&api.get_metadata("x"));
    assert_send(&api.list(&ListParams::default()));
    assert_send(&api.create(&PostParams::default(), &cm));
    assert_send(&api.replace("x", &PostParams::default(), &cm));
    assert_send(&api.patch("x", &PatchParams::default(), &patch));
    assert_send(&api.patch_status("x", &PatchParams::default(), &patch));
    assert_send(&api.delete("x", &DeleteParams::default()));
    assert_send(&api.entry("x"));
    assert_send(&api.watch(&WatchParams::default(), "0"));
    assert_send(&api.watch_metadata(&WatchParams::default(), "0"));
    assert_send(&pods.logs("p", &LogParams::default()));
    assert_send(&client.apiserver_version());
    assert_send(&Client::try_default());
    assert_send(&Config::infer());

    // The stream itself, and spawning owned futures, as `tokio::spawn` requires.
    let owned = api.clone();
    assert_spawnable(async move { owned.get("x").await });
    let owned = api.clone();
    assert_spawnable(async move {
        use futures::StreamExt;
        let stream = owned.watch(&WatchParams::default(), "0").await?;
        assert_send(&stream);
        let mut stream = stream.boxed();
        stream.next().await.transpose()
    });
    let owned = client.clone();
    assert_spawnable(async move {
        let request = http::Request::get("/api").body(Vec::new())?;
        let events = owned.request_events::<ConfigMap>(request).await?;
        assert_send(&events);
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    let owned = client.clone();
    assert_spawnable(async move {
        use futures::{AsyncBufReadExt, TryStreamExt};
        let request = http::Request::get("/x").body(Vec::new())?;
        let reader = owned.request_stream(request).await?;
        assert_send(&reader);
        assert_sync(&reader);
        let lines: Vec<String> = reader.lines().try_collect().await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(lines)
    });
    let owned = pods.clone();
    assert_spawnable(async move {
        use futures::{AsyncBufReadExt, TryStreamExt};
        let mut lines = owned.log_stream("p", &LogParams::default()).await?.lines();
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(lines.try_next().await?)
    });
    let owned = client.clone();
    assert_spawnable(async move {
        use kube_wasm_client::client::Body;
        let request = http::Request::get("/version").body(Body::empty())?;
        let send = owned.send(request);
        assert_send(&send);
        let body = send.await?.into_body();
        assert_send(&body);
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(body.collect_bytes().await?)
    });
    let owned = client.clone();
    assert_spawnable(async move {
        let discovery = Discovery::new(owned.clone()).run().await?;
        let discovery = Discovery::new(owned.clone())
            .filter(&["apps"])
            .run_aggregated()
            .await
            .map(|d| d.groups().count() + discovery.groups().count())?;
        let gvk = kube_wasm_client::core::GroupVersionKind::gvk("apps", "v1", "Deployment");
        let (ar, _) = discovery::pinned_kind(&owned, &gvk).await?;
        let gv = "apps/v1".parse()?;
        let group = discovery::pinned_group(&owned, &gv).await?;
        let _ = discovery::group(&owned, "apps").await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((discovery, ar, group.name().len()))
    });
}

/// The remote command types (`ws` feature) are `Send` and `Sync` as kube 5.0's are (their
/// fields there: tokio pipes, futures channels and a tokio `JoinHandle`), and so are the
/// futures of `exec`, `attach`, `portforward` and of their sessions.
#[cfg(feature = "ws")]
#[allow(dead_code, clippy::let_underscore_future)]
fn remote_command_types_and_futures_are_send(pods: Api<Pod>) {
    use kube_wasm_client::api::{AttachParams, AttachedProcess, Portforwarder, TerminalSize};
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<AttachedProcess>();
    assert_send_sync::<Portforwarder>();
    assert_send_sync::<TerminalSize>();

    let ap = AttachParams::default();
    assert_send(&pods.exec("p", vec!["ls"], &ap));
    assert_send(&pods.attach("p", &ap));
    assert_send(&pods.portforward("p", &[80]));
    let owned = pods.clone();
    assert_spawnable(async move {
        let mut process = owned
            .exec("p", vec!["ls"], &AttachParams::default())
            .await?;
        let status = process.take_status();
        assert_send(&status);
        let resize = process.terminal_size();
        assert_send(&resize);
        let _ = (process.stdin(), process.stdout(), process.stderr());
        process.join().await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    let owned = pods.clone();
    assert_spawnable(async move {
        let mut forwarder = owned.portforward("p", &[80]).await?;
        let stream = forwarder.take_stream(80);
        assert_send(&stream);
        let error = forwarder.take_error(80);
        assert_send(&error);
        forwarder.join().await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
}

#[test]
fn send_checks_compile() {
    // The checks above are compile-time; referencing the functions keeps them type-checked.
    let _ = public_futures_and_streams_are_send;
    #[cfg(feature = "ws")]
    let _ = remote_command_types_and_futures_are_send;
}
