//! One test per scenario controller (except the apiserver restarts, in `parity_restart.rs`): both
//! builds through the same steps, then the three comparisons. Tests run in parallel.

mod common;

use common::{config_map, kind, parity, widget};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use parity_scenarios::types::{Gate, GateSpec, Team, TeamSpec, Widget};
use serde_json::json;

#[tokio::test]
async fn create_owned_config_maps() {
    let mut p = parity("parity-create", vec![kind::<Widget>(), kind::<ConfigMap>()]).await;
    p.setup(async |run| run.create(&widget("listed", "one")).await)
        .await;
    p.start(async |run| run.saw(&["reconcile/listed status Created"]))
        .await;
    p.step(
        "create widget b",
        async |run| run.create(&widget("b", "two")).await,
        async |run| run.saw(&["reconcile/b status Created"]),
    )
    .await;
    p.step(
        "delete ConfigMap b by hand",
        async |run| run.delete::<ConfigMap>("b").await,
        async |run| (run.count("reconcile/b created its ConfigMap") == 2).then_some(()),
    )
    .await;
    p.step(
        "delete widget listed",
        async |run| run.delete::<Widget>("listed").await,
        async |run| run.gone::<Widget>("listed").await,
    )
    .await;
    p.finish(&["ConfigMap/b", "ConfigMap/listed", "Widget/b"])
        .await;
}

#[tokio::test]
async fn update_with_server_side_apply() {
    let mut p = parity(
        "parity-update-ssa",
        vec![kind::<Widget>(), kind::<ConfigMap>()],
    )
    .await;
    let applied =
        |generation: i64| format!("reconcile/w status applied for generation Some({generation})");
    p.setup(async |run| run.create(&widget("w", "one")).await)
        .await;
    p.start(async |run| run.saw(&[&applied(1)])).await;
    p.step(
        "change the content",
        async |run| {
            run.merge_patch::<Widget>("w", json!({"spec": {"content": "two"}}))
                .await
        },
        async |run| run.saw(&[&applied(2)]),
    )
    .await;
    p.step(
        "change the key",
        async |run| {
            run.merge_patch::<Widget>("w", json!({"spec": {"key": "greeting"}}))
                .await
        },
        async |run| run.saw(&[&applied(3)]),
    )
    .await;
    p.step(
        "tamper with the ConfigMap",
        async |run| {
            let patch = json!({"data": {"greeting": "tampered"}});
            run.merge_patch::<ConfigMap>("w", patch).await
        },
        async |run| {
            let line = r#"reconcile/w applied ConfigMap {"greeting": "two"}"#;
            (run.count(line) == 2).then_some(())
        },
    )
    .await;
    p.finish(&["ConfigMap/w", "Widget/w"]).await;
}

#[tokio::test]
async fn delete_with_finalizer() {
    let mut p = parity(
        "parity-finalizer",
        vec![kind::<Widget>(), kind::<ConfigMap>()],
    )
    .await;
    p.setup(async |run| run.create(&widget("guarded", "one")).await)
        .await;
    p.start(async |run| run.saw(&["reconcile/guarded created guarded-data"]))
        .await;
    p.step(
        "create a second widget",
        async |run| run.create(&widget("second", "two")).await,
        async |run| run.saw(&["reconcile/second created second-data"]),
    )
    .await;
    p.step(
        "delete the first widget",
        async |run| run.delete::<Widget>("guarded").await,
        async |run| {
            run.saw(&["reconcile/guarded cleaned up guarded-data"])?;
            run.gone::<Widget>("guarded").await
        },
    )
    .await;
    p.finish(&["ConfigMap/second-data", "Widget/second"]).await;
}

fn team(name: &str, members: &[&str]) -> Team {
    let members = members.iter().map(|m| m.to_string()).collect();
    Team::new(name, TeamSpec { members })
}

#[tokio::test]
async fn multiple_owners() {
    let mut p = parity("parity-owners", vec![kind::<Team>(), kind::<ConfigMap>()]).await;
    p.setup(async |run| run.create(&team("red", &["ann", "bob"])).await)
        .await;
    p.start(async |run| run.saw(&[r#"reconcile/red roster entry Some("ann,bob")"#]))
        .await;
    p.step(
        "blue joins",
        async |run| run.create(&team("blue", &["cy"])).await,
        async |run| run.saw(&[r#"reconcile/blue roster entry Some("cy")"#]),
    )
    .await;
    p.step(
        "red loses a member",
        async |run| {
            run.merge_patch::<Team>("red", json!({"spec": {"members": ["ann"]}}))
                .await
        },
        async |run| run.saw(&[r#"reconcile/red roster entry Some("ann")"#]),
    )
    .await;
    p.step(
        "blue empties",
        async |run| {
            run.merge_patch::<Team>("blue", json!({"spec": {"members": []}}))
                .await
        },
        async |run| run.saw(&["reconcile/blue roster entry None"]),
    )
    .await;
    p.finish(&["ConfigMap/roster", "Team/blue", "Team/red"])
        .await;
}

#[tokio::test]
async fn conflict_retries() {
    let mut p = parity("parity-conflict", vec![kind::<Widget>()]).await;
    p.setup(async |run| run.create(&widget("contested", "one")).await)
        .await;
    p.start(async |run| run.saw(&["reconcile/contested handled generation 1 on attempt 2"]))
        .await;
    p.step(
        "change the spec",
        async |run| {
            run.merge_patch::<Widget>("contested", json!({"spec": {"content": "two"}}))
                .await
        },
        async |run| run.saw(&["reconcile/contested handled generation 2 on attempt 2"]),
    )
    .await;
    p.finish(&["Widget/contested"]).await;
}

#[tokio::test]
async fn requeue_timing() {
    let mut p = parity("parity-requeue", vec![kind::<Widget>()]).await;
    p.setup(async |run| run.create(&widget("again", "one")).await)
        .await;
    p.start(async |run| run.saw(&["reconcile/again reconcile #3 after the requested delay"]))
        .await;
    p.step(
        "a second widget",
        async |run| run.create(&widget("later", "two")).await,
        async |run| run.saw(&["reconcile/later reconcile #3 after the requested delay"]),
    )
    .await;
    p.finish(&["Widget/again", "Widget/later"]).await;
}

#[tokio::test]
async fn reflector_store_and_label_predicate() {
    let mut p = parity("parity-reflector", vec![kind::<ConfigMap>()]).await;
    let watched = [("parity/watched", "yes")];
    p.setup(async |run| {
        run.create(&config_map(
            "a",
            &[watched[0], ("parity/tier", "gold")],
            &[],
        ))
        .await;
        run.create(&config_map("hidden", &[], &[])).await;
    })
    .await;
    p.start(async |run| run.saw(&["store a=gold"])).await;
    p.step(
        "label b",
        async |run| {
            run.create(&config_map(
                "b",
                &[watched[0], ("parity/tier", "silver")],
                &[],
            ))
            .await
        },
        async |run| run.saw(&["store a=gold b=silver"]),
    )
    .await;
    p.step(
        "change a's tier",
        async |run| {
            let patch = json!({"metadata": {"labels": {"parity/tier": "bronze"}}});
            run.merge_patch::<ConfigMap>("a", patch).await
        },
        async |run| run.saw(&["store a=bronze b=silver"]),
    )
    .await;
    p.step(
        "change a's data only (the predicate drops it)",
        async |run| {
            run.merge_patch::<ConfigMap>("a", json!({"data": {"x": "1"}}))
                .await
        },
        async |_| Some(()),
    )
    .await;
    p.step(
        "unlabel b",
        async |run| {
            let patch = json!({"metadata": {"labels": {"parity/watched": "no"}}});
            run.merge_patch::<ConfigMap>("b", patch).await
        },
        async |run| run.saw(&["store a=bronze"]),
    )
    .await;
    p.finish(&["ConfigMap/a", "ConfigMap/b", "ConfigMap/hidden"])
        .await;
}

#[tokio::test]
async fn streaming_lists() {
    let mut p = parity("parity-streaming", vec![kind::<ConfigMap>()]).await;
    let streamed = [("parity/streamed", "yes")];
    p.setup(async |run| {
        run.create(&config_map("a", &streamed, &[("n", "1")])).await;
        run.create(&config_map("b", &streamed, &[("n", "1")])).await;
        run.create(&config_map("hidden", &[], &[])).await;
    })
    .await;
    p.start(async |run| {
        run.saw(&[
            "store a=1 b=1",
            "watch initial [\"a\", \"b\"] end Some(\"true\")",
        ])
    })
    .await;
    p.step(
        "create c",
        async |run| run.create(&config_map("c", &streamed, &[("n", "1")])).await,
        async |run| run.saw(&["store a=1 b=1 c=1", "watch added c"]),
    )
    .await;
    p.step(
        "change a",
        async |run| {
            run.merge_patch::<ConfigMap>("a", json!({"data": {"n": "2"}}))
                .await
        },
        async |run| run.saw(&["store a=2 b=1 c=1", "watch modified a"]),
    )
    .await;
    p.step(
        "unlabel b",
        async |run| {
            let patch = json!({"metadata": {"labels": {"parity/streamed": "no"}}});
            run.merge_patch::<ConfigMap>("b", patch).await
        },
        async |run| run.saw(&["store a=2 c=1", "watch deleted b"]),
    )
    .await;
    p.finish(&[
        "ConfigMap/a",
        "ConfigMap/b",
        "ConfigMap/c",
        "ConfigMap/hidden",
    ])
    .await;
}

#[tokio::test]
async fn watcher_paging_selectors_and_semantics() {
    let mut p = parity("parity-paging", vec![kind::<ConfigMap>()]).await;
    p.setup(async |run| {
        for name in ["c1", "c2", "c3", "c4", "c5", "skip-me"] {
            run.create(&config_map(name, &[], &[("v", "1")])).await;
        }
    })
    .await;
    p.start(async |run| run.saw(&["paged InitDone", "any InitDone"]))
        .await;
    p.step(
        "create c6",
        async |run| run.create(&config_map("c6", &[], &[("v", "6")])).await,
        async |run| {
            run.saw(&[
                r#"paged Apply c6 Some({"v": "6"})"#,
                r#"any Apply c6 Some({"v": "6"})"#,
            ])
        },
    )
    .await;
    p.step(
        "delete c2",
        async |run| run.delete::<ConfigMap>("c2").await,
        async |run| run.saw(&["paged Delete c2", "any Delete c2"]),
    )
    .await;
    p.step(
        "change skip-me (selected out)",
        async |run| {
            run.merge_patch::<ConfigMap>("skip-me", json!({"data": {"v": "2"}}))
                .await
        },
        async |_| Some(()),
    )
    .await;
    p.finish(&[
        "ConfigMap/c1",
        "ConfigMap/c3",
        "ConfigMap/c4",
        "ConfigMap/c5",
        "ConfigMap/c6",
        "ConfigMap/skip-me",
    ])
    .await;
}

#[tokio::test]
async fn watch_bookmarks() {
    let p = parity("parity-bookmarks", vec![kind::<ConfigMap>()]).await;
    let mut p = p.label_versions().whole_run_reads();
    p.setup(async |run| {
        run.create(&config_map("a", &[], &[])).await;
        run.create(&config_map("b", &[], &[])).await;
        run.bump_resource_version().await;
    })
    .await;
    p.start(async |run| run.saw(&["watch watch #1 from the resourceVersion of the list"]))
        .await;
    p.step(
        "create c; the first watch times out",
        async |run| {
            run.create(&config_map("c", &[], &[])).await;
            run.bump_resource_version().await;
        },
        async |run| {
            run.saw(&["watch #1 Added c", "watcher Apply c", "watch #1 ended"])?;
            run.observed_containing("watch watch #2 from")
        },
    )
    .await;
    p.step(
        "the second watch times out",
        async |_| {},
        async |run| {
            run.saw(&["watch #2 ended"])?;
            run.observed_containing("watch watch #3 from")
        },
    )
    .await;
    p.finish(&["ConfigMap/a", "ConfigMap/b", "ConfigMap/c"])
        .await;
}

#[tokio::test]
async fn events_recorder() {
    // The second event about `noted` has the same key (type, action, reason, reporter,
    // regarding object) as the first: the recorder patches the first event's series instead
    // of creating one, so its note stays "generation 1".
    let event = kind::<Event>();
    let mut p = parity("parity-events", vec![kind::<Widget>(), event]).await;
    p.setup(async |run| run.create(&widget("noted", "one")).await)
        .await;
    p.start(async |run| run.saw(&["reconcile/noted event published for generation Some(1)"]))
        .await;
    p.step(
        "change the spec",
        async |run| {
            run.merge_patch::<Widget>("noted", json!({"spec": {"content": "two"}}))
                .await
        },
        async |run| run.saw(&["reconcile/noted event published for generation Some(2)"]),
    )
    .await;
    p.step(
        "a second widget",
        async |run| run.create(&widget("other", "one")).await,
        async |run| run.saw(&["reconcile/other event published for generation Some(1)"]),
    )
    .await;
    p.finish(&[
        "Event/Widget/noted/Seen/generation 1 of noted",
        "Event/Widget/other/Seen/generation 1 of other",
        "Widget/noted",
        "Widget/other",
    ])
    .await;
}

#[tokio::test]
async fn await_conditions() {
    let mut p = parity("parity-wait", vec![kind::<ConfigMap>(), kind::<Gate>()]).await;
    p.setup(async |run| {
        let gate = Gate::new(
            "main",
            GateSpec {
                guards: "the suite".into(),
            },
        );
        run.create(&gate).await
    })
    .await;
    p.start(async |run| run.saw(&["wait waiting for gate main to open"]))
        .await;
    p.step(
        "open the gate",
        async |run| {
            run.merge_patch_status::<Gate>("main", json!({"status": {"open": true}}))
                .await
        },
        async |run| run.saw(&["wait created gate-opened"]),
    )
    .await;
    p.step(
        "delete the gate",
        async |run| run.delete::<Gate>("main").await,
        async |run| run.saw(&["wait created gate-closed"]),
    )
    .await;
    p.finish(&["ConfigMap/gate-closed", "ConfigMap/gate-opened"])
        .await;
}
