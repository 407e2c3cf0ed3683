//! Reconciling one WasmController: behind the finalizer, bring its module to its spec — pull,
//! compile, (re)start — or stop it before the resource goes away.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{self, finalizer};
use kube::{Resource as _, ResourceExt as _};
use oci_client::secrets::RegistryAuth;

use super::claims::{self, Gate};
use super::error::Error;
use super::events::event;
use super::modules::{Key, module_name};
use super::{Context, FINALIZER, status};
use crate::fleet::oci::pull_secret::{DOCKER_CONFIG_JSON_KEY, credentials_for};
use crate::fleet::oci::store::Digest;
use crate::fleet::wasm_controller::{Phase, Validated, WasmController, WasmControllerStatus};
use crate::runtime::options::ModuleSource;
use crate::runtime::supervisor::RunPhase;

/// How long a retriable failure (registry unreachable) waits before the next try.
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// How soon a reconcile that lost a race for the finalizers is tried again.
const RACE_RETRY: Duration = Duration::from_millis(500);

/// How old an unused stored module must be before it is removed: one pulled a moment ago may
/// be about to start for another resource.
const GARBAGE_MIN_AGE: Duration = Duration::from_secs(600);

/// Reconciles `obj` (kube-runtime's `Controller` calls it on every change).
pub(crate) async fn reconcile(
    obj: Arc<WasmController>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let namespace = obj.namespace().unwrap_or_default();
    let api: Api<WasmController> = Api::namespaced(ctx.client.clone(), &namespace);
    let (epoch, claimed) = if obj.meta().deletion_timestamp.is_some() {
        if claims::held_elsewhere(&obj, &ctx).await {
            // Its holder stops the module and removes the finalizer; if the holder dies
            // first, its claim lapses and this replica cleans up.
            return Ok(Action::requeue(ctx.placement.config().lease_duration));
        }
        (None, None)
    } else {
        // Only the replica holding the claim goes on (and puts the finalizer on).
        match claims::settle(&obj, &ctx).await? {
            Gate::Run { epoch, claimed } => (Some(epoch), claimed),
            Gate::Done(action) => return Ok(action),
        }
    };
    finalizer(&api, FINALIZER, obj, |event| async {
        match event {
            finalizer::Event::Apply(obj) => match epoch {
                Some(epoch) => apply(obj, ctx.clone(), epoch, claimed).await,
                None => Ok(Action::await_change()),
            },
            finalizer::Event::Cleanup(obj) => cleanup(obj, ctx.clone()).await,
        }
    })
    .await
    .map_err(|e| match e {
        finalizer::Error::ApplyFailed(e) | finalizer::Error::CleanupFailed(e) => e,
        finalizer::Error::AddFinalizer(kube::Error::Api(status))
            if status.code == 409 || status.code == 422 =>
        {
            Error::FinalizerRace(status.message)
        }
        other => Error::Finalizer(other.to_string()),
    })
}

/// What the controller does after a failed reconcile.
pub(crate) fn error_policy(_obj: Arc<WasmController>, err: &Error, _ctx: Arc<Context>) -> Action {
    if let Error::FinalizerRace(_) = err {
        tracing::debug!("reconcile: {err}; again in {RACE_RETRY:?}");
        return Action::requeue(RACE_RETRY);
    }
    tracing::warn!("reconcile failed, retrying in {RETRY_AFTER:?}: {err}");
    Action::requeue(RETRY_AFTER)
}

fn key_of(obj: &WasmController) -> Key {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}

/// Brings the module of `obj`, whose claim this replica holds since `epoch`, to its spec.
/// `claimed`: the status as the claim just written left it, if one was.
async fn apply(
    obj: Arc<WasmController>,
    ctx: Arc<Context>,
    epoch: u64,
    claimed: Option<WasmControllerStatus>,
) -> Result<Action, Error> {
    let key = key_of(&obj);
    let generation = obj.meta().generation;
    let api: Api<WasmController> = Api::namespaced(ctx.client.clone(), &key.0);
    let last = claimed.or_else(|| obj.status.clone());
    let mut writer = status::StatusWriter::new(api, &key.1, last);
    let not_running = |writer: &status::StatusWriter,
                       phase,
                       message: &str,
                       pulled: bool,
                       digest: Option<&str>| {
        status::not_running(phase, message, pulled, digest, generation, writer.last())
    };
    if ctx.modules.started_for(&key).is_none()
        && let Some(action) = ctx
            .attempts
            .wait(&key, generation, std::time::Instant::now())
    {
        return Ok(action);
    }
    let validated = match obj.spec.validate(&key.0) {
        Ok(validated) => validated,
        Err(problems) => {
            let message = problems.join("; ");
            ctx.attempts
                .failed(&key, generation, None, std::time::Instant::now());
            ctx.modules.stop(&key, ctx.config.stop_timeout).await;
            event(
                &ctx,
                &obj,
                EventType::Warning,
                "InvalidSpec",
                message.clone(),
            )
            .await;
            let status = not_running(&writer, Phase::Failed, &message, false, None);
            writer.write(status).await?;
            return Ok(Action::await_change());
        }
    };
    if ctx
        .modules
        .started_for(&key)
        .is_some_and(|(started, _)| started == generation)
    {
        return Ok(Action::await_change());
    }
    if matches!(validated.source, ModuleSource::Image(_)) {
        let status = not_running(&writer, Phase::Pulling, "", false, None);
        writer.write(status).await?;
    }
    if let Some(account) = &validated.options.service_account {
        let accounts: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), &account.namespace);
        if accounts.get_opt(&account.name).await?.is_none() {
            let message = format!("the ServiceAccount {account} does not exist");
            ctx.attempts.failed(
                &key,
                generation,
                Some(RETRY_AFTER),
                std::time::Instant::now(),
            );
            event(
                &ctx,
                &obj,
                EventType::Warning,
                "ServiceAccountMissing",
                message.clone(),
            )
            .await;
            let status = not_running(&writer, Phase::BackOff, &message, false, None);
            writer.write(status).await?;
            return Ok(Action::requeue(RETRY_AFTER));
        }
    }
    let (path, digest) = match fetch(&ctx, &key.0, &validated).await {
        Ok(fetched) => fetched,
        Err(Fetch { message, retriable }) => {
            let (phase, reason, action) = if retriable {
                (Phase::BackOff, "PullBackOff", Action::requeue(RETRY_AFTER))
            } else {
                (Phase::Failed, "PullFailed", Action::await_change())
            };
            ctx.attempts.failed(
                &key,
                generation,
                retriable.then_some(RETRY_AFTER),
                std::time::Instant::now(),
            );
            event(&ctx, &obj, EventType::Warning, reason, message.clone()).await;
            let status = not_running(&writer, phase, &message, false, None);
            writer.write(status).await?;
            return Ok(action);
        }
    };
    if let ModuleSource::Image(image) = &validated.source {
        event(
            &ctx,
            &obj,
            EventType::Normal,
            "Pulled",
            format!("pulled {image} ({digest})"),
        )
        .await;
    }
    if ctx.modules.started_for(&key).is_some() {
        ctx.modules.stop(&key, ctx.config.stop_timeout).await;
        event(
            &ctx,
            &obj,
            EventType::Normal,
            "Replaced",
            "stopped the module of the previous spec".into(),
        )
        .await;
    }
    let name = module_name(&key);
    let loader = ctx.host.clone();
    let load_name = name.clone();
    let loaded = tokio::task::spawn_blocking(move || loader.load_file(&load_name, &path))
        .await
        .map_err(|e| Error::Finalizer(format!("the compile task failed: {e}")))?;
    let module = match loaded {
        Ok(module) => module.with_options(validated.options),
        Err(err) => {
            let message = format!("module `{name}` {err}");
            ctx.attempts
                .failed(&key, generation, None, std::time::Instant::now());
            event(&ctx, &obj, EventType::Warning, "Failed", message.clone()).await;
            let status = not_running(
                &writer,
                Phase::Failed,
                &message,
                true,
                Some(digest.as_str()),
            );
            writer.write(status).await?;
            return Ok(Action::await_change());
        }
    };
    let started = ctx.placement.is_fresh().then(|| {
        ctx.modules.start(
            key.clone(),
            generation,
            digest.to_string(),
            &ctx.host,
            module,
            epoch,
        )
    });
    let Some(Some(state)) = started else {
        // This replica lost its Lease since the claim: the claim is taken again once it is
        // back.
        return Ok(Action::requeue(ctx.placement.config().renew_period));
    };
    ctx.attempts.forget(&key);
    collect_garbage(&ctx);
    event(
        &ctx,
        &obj,
        EventType::Normal,
        "Started",
        format!(
            "started module `{name}` ({digest}) on replica {}",
            ctx.placement.replica()
        ),
    )
    .await;
    tokio::spawn(report(
        ctx.clone(),
        obj.clone(),
        key,
        generation,
        digest.to_string(),
        state,
        writer,
    ));
    Ok(Action::await_change())
}

/// Follows one started module: writes its status when where it is changes, records Events for
/// crashes, back-offs and its end, until it ends or is replaced.
async fn report(
    ctx: Arc<Context>,
    obj: Arc<WasmController>,
    key: Key,
    generation: Option<i64>,
    digest: String,
    mut state: tokio::sync::watch::Receiver<crate::runtime::supervisor::RunState>,
    mut writer: status::StatusWriter,
) {
    let name = module_name(&key);
    let mut last_phase = None;
    loop {
        // A module ending because the host stops is handed over, not reported as stopped.
        let still_ours = !ctx.modules.host_stopping()
            && ctx
                .modules
                .started_for(&key)
                .is_some_and(|(g, d)| g == generation && d == digest);
        let run = state.borrow_and_update().clone();
        if !still_ours && run.phase != RunPhase::Ended {
            return;
        }
        let current = status::of_running(
            &run,
            ctx.host.metrics(),
            &name,
            &digest,
            generation,
            writer.last(),
        );
        // A module the operator stopped itself (replaced, deleted) gets its Event there.
        if still_ours && last_phase != Some(current.phase) {
            let (type_, reason) = match current.phase {
                Phase::BackOff => (EventType::Warning, "BackOff"),
                Phase::Failed => (EventType::Warning, "Crashed"),
                Phase::Stopped => (EventType::Normal, "Stopped"),
                Phase::Suspended => (EventType::Normal, "Suspended"),
                _ => (EventType::Normal, ""),
            };
            if !reason.is_empty() {
                let note = current
                    .message
                    .clone()
                    .unwrap_or_else(|| format!("module `{name}`"));
                event(&ctx, &obj, type_, reason, note).await;
            }
            last_phase = Some(current.phase);
        }
        // A stopped module's resource may be going away; only a live one's status is written.
        if still_ours && let Err(err) = writer.write(current).await {
            tracing::debug!("status of {}/{}: {err}", key.0, key.1);
        }
        if run.phase == RunPhase::Ended {
            return;
        }
        tokio::select! {
            changed = state.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    }
}

/// Removes the stored modules no running module uses any more.
fn collect_garbage(ctx: &Context) {
    let in_use = ctx
        .modules
        .digests()
        .iter()
        .filter_map(|d| Digest::parse(d).ok())
        .collect();
    match ctx.puller.store().collect_garbage(&in_use, GARBAGE_MIN_AGE) {
        Ok(removed) if !removed.is_empty() => {
            tracing::info!(?removed, "removed modules no WasmController uses");
        }
        Ok(_) => {}
        Err(err) => tracing::warn!("collecting unused modules: {err}"),
    }
}

async fn cleanup(obj: Arc<WasmController>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = key_of(&obj);
    ctx.attempts.forget(&key);
    if ctx.modules.started_for(&key).is_some() {
        ctx.modules.stop(&key, ctx.config.stop_timeout).await;
        collect_garbage(&ctx);
        event(
            &ctx,
            &obj,
            EventType::Normal,
            "Stopped",
            format!("stopped module `{}` before deletion", module_name(&key)),
        )
        .await;
    }
    Ok(Action::await_change())
}

/// A failed fetch: its message, and whether trying again later can help.
struct Fetch {
    message: String,
    retriable: bool,
}

/// The module file and its digest: pulled with the pull secrets' credentials, or read.
async fn fetch(
    ctx: &Context,
    namespace: &str,
    validated: &Validated,
) -> Result<(std::path::PathBuf, Digest), Fetch> {
    match &validated.source {
        ModuleSource::File(path) => {
            let path = local_module(ctx.config.local_modules.as_deref(), path)?;
            let bytes = tokio::fs::read(&path).await.map_err(|e| Fetch {
                message: format!("reading {}: {e}", path.display()),
                retriable: true,
            })?;
            Ok((path, Digest::of(&bytes)))
        }
        ModuleSource::Image(image) => {
            let auth = registry_auth(ctx, namespace, image, &validated.pull_secrets).await?;
            match ctx.puller.pull(image, &auth).await {
                Ok(pulled) => Ok((pulled.path, pulled.digest)),
                Err(err) => Err(Fetch {
                    retriable: err.is_retriable(),
                    message: err.to_string(),
                }),
            }
        }
    }
}

/// Where a WasmController's `path` is: inside the host's `--local-modules` folder, as a
/// relative path without `..`; anything else is refused (the resource's author must not be
/// able to make the host read, or probe, its other files).
fn local_module(
    folder: Option<&std::path::Path>,
    path: &std::path::Path,
) -> Result<std::path::PathBuf, Fetch> {
    use std::path::Component;
    let refuse = |why: &str| Fetch {
        message: format!("spec.path {}: {why}", path.display()),
        retriable: false,
    };
    let Some(folder) = folder else {
        return Err(refuse(
            "this host runs no local modules (start it with --local-modules DIR)",
        ));
    };
    if !path.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(refuse(
            "must be a relative path inside the host's local modules folder, without `..`",
        ));
    }
    Ok(folder.join(path))
}

/// The credentials for `image`'s registry from the first pull secret that has them, read with
/// the host's own client (never the module's).
async fn registry_auth(
    ctx: &Context,
    namespace: &str,
    image: &str,
    secrets: &[String],
) -> Result<RegistryAuth, Fetch> {
    let Ok(reference) = image.parse::<oci_client::Reference>() else {
        return Ok(RegistryAuth::Anonymous);
    };
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), namespace);
    for name in secrets {
        let secret = api.get_opt(name).await.map_err(|e| Fetch {
            message: format!("reading the pull secret {namespace}/{name}: {e}"),
            retriable: true,
        })?;
        let Some(secret) = secret else {
            return Err(Fetch {
                message: format!("the pull secret {namespace}/{name} does not exist"),
                retriable: true,
            });
        };
        let Some(json) = secret
            .data
            .as_ref()
            .and_then(|d| d.get(DOCKER_CONFIG_JSON_KEY))
        else {
            continue;
        };
        match credentials_for(&json.0, reference.resolve_registry()) {
            Ok(Some(auth)) => return Ok(auth),
            Ok(None) => {}
            Err(e) => {
                return Err(Fetch {
                    message: format!("the pull secret {namespace}/{name}: {e}"),
                    retriable: false,
                });
            }
        }
    }
    Ok(RegistryAuth::Anonymous)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn local_modules_stay_in_their_folder() {
        let folder = Path::new("/srv/modules");
        assert_eq!(
            local_module(Some(folder), Path::new("team/mirror.wasm")).ok(),
            Some(folder.join("team/mirror.wasm"))
        );
        for escape in [
            "/etc/shadow",
            "../etc/shadow",
            "team/../../x.wasm",
            "./x.wasm",
        ] {
            let refused = local_module(Some(folder), Path::new(escape))
                .err()
                .map(|f| f.message);
            assert!(
                refused.is_some_and(|m| m.contains("relative path")),
                "{escape}"
            );
        }
        let refused = local_module(None, Path::new("x.wasm"))
            .err()
            .map(|f| f.message);
        assert!(refused.is_some_and(|m| m.contains("--local-modules")));
    }
}
