//! Multiple owners: every `Team` with members server-side applies, under its own field manager,
//! its entry of the shared `roster` ConfigMap and an owner reference to itself (not a
//! controller reference), so the roster has one owner per team. A team with no members applies
//! an empty configuration, which removes its entry and reference. Roster changes reach every
//! owning team through `watches` mapping owner references back to teams.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, Resource};
use parity_scenarios::observe;
use parity_scenarios::types::Team;
use std::sync::Arc;

const ROSTER: &str = "roster";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let teams = Api::<Team>::default_namespaced(client.clone());
    let config_maps = Api::<ConfigMap>::default_namespaced(client.clone());
    Controller::new(teams, watcher::Config::default())
        .watches(config_maps, watcher::Config::default(), |cm: ConfigMap| {
            let ns = cm.namespace().unwrap_or_default();
            cm.owner_references()
                .iter()
                .filter(|o| o.kind == "Team")
                .map(|o| ObjectRef::<Team>::new(&o.name).within(&ns))
                .collect::<Vec<_>>()
        })
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|_| async {})
        .await;
    Ok(())
}

async fn reconcile(team: Arc<Team>, client: Arc<Client>) -> Result<Action, kube::Error> {
    let name = team.name_any();
    let ns = team.namespace().unwrap_or_default();
    let config_maps: Api<ConfigMap> = Api::namespaced((*client).clone(), &ns);
    let roster = config_maps.get_opt(ROSTER).await?;
    let entry = roster
        .as_ref()
        .and_then(|cm| cm.data.as_ref()?.get(&name).cloned());
    let owned = roster
        .as_ref()
        .is_some_and(|cm| cm.owner_references().iter().any(|o| o.name == name));
    let want = (!team.spec.members.is_empty()).then(|| team.spec.members.join(","));
    if entry == want && owned == want.is_some() {
        return Ok(Action::await_change());
    }
    let manager = format!("team-{name}");
    let patch = match &want {
        Some(members) => serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": ROSTER,
                "ownerReferences": team.object_ref(&()).uid.map(|uid| vec![serde_json::json!({
                    "apiVersion": Team::api_version(&()),
                    "kind": "Team",
                    "name": name,
                    "uid": uid,
                })]),
            },
            "data": { name.clone(): members },
        }),
        None => serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "name": ROSTER },
        }),
    };
    config_maps
        .patch(ROSTER, &PatchParams::apply(&manager), &Patch::Apply(&patch))
        .await?;
    observe(
        &format!("reconcile/{name}"),
        format!("roster entry {want:?}"),
    );
    Ok(Action::await_change())
}

fn error_policy(team: Arc<Team>, error: &kube::Error, _: Arc<Client>) -> Action {
    observe(
        &format!("reconcile/{}", team.name_any()),
        format!("failed: {error}"),
    );
    Action::requeue(std::time::Duration::from_secs(1))
}
