//! Discovery and every tool over MCP.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::suite::support::{config, harness_bin, start, texts};

/// The catalog's definitions as the MCP tools they must be: name, description, input schema
/// and annotations, and no output schema in the default (text) shape.
fn expected_tools() -> Vec<Value> {
    turnkit_families::catalog(
        &turnkit_families::FamiliesConfig::defaults(),
        turnkit_families::ChildrenMode::Without,
    )
    .unwrap()
    .iter()
    .map(|d| {
        json!({
            "name": d.name,
            "description": d.description,
            "inputSchema": d.input_schema,
            "annotations": d.annotations.expect("every tool declares annotations"),
        })
    })
    .collect()
}

#[tokio::test]
async fn tools_list_is_the_catalog_with_annotations_and_no_output_schema() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "s1", &config(), &[]).await;
    let tools = server.client.list_all_tools().await.unwrap();
    let listed: Vec<Value> = tools
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect();
    assert_eq!(listed, expected_tools());
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "todo_write",
            "job_output",
            "job_list",
            "job_kill",
            "bash",
            "schedule_create",
            "schedule_list",
            "schedule_delete",
        ]
    );
    let info = server.client.peer_info().unwrap();
    assert_eq!(info.server_info.clone().unwrap().name, "harness");
    server.stop().await;
}

/// `harness tools --config C --format mcp` prints exactly the `tools/list` of `harness mcp
/// --config C`, and with `--output-schema` exactly that of `harness mcp --structured` (output
/// schemas included): for the default configuration, and with the terminal family enabled
/// (whose three tools come after bash).
#[tokio::test]
async fn harness_tools_prints_what_harness_mcp_serves() {
    for (config, terminal) in [
        (config(), false),
        (
            json!({"todo": {"allowParallelInProgress": true}, "terminal": {}}),
            true,
        ),
    ] {
        for (serve_args, print_args) in [
            (&[][..], &[][..]),
            (&["--structured"][..], &["--output-schema"][..]),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let server = start(dir.path(), "s1", &config, serve_args).await;
            let listed: Vec<Value> = server
                .client
                .list_all_tools()
                .await
                .unwrap()
                .iter()
                .map(|t| serde_json::to_value(t).unwrap())
                .collect();
            server.stop().await;
            let output = std::process::Command::new(harness_bin())
                .args(["tools", "--format", "mcp", "--config"])
                .arg(dir.path().join("config.json"))
                .args(print_args)
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&output.stderr),
                "",
                "harness tools failed"
            );
            let printed: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(printed, listed, "{config} {print_args:?}");
            let with_schema = listed
                .iter()
                .filter(|t| t.get("outputSchema").is_some())
                .count();
            assert_eq!(
                with_schema,
                if print_args.is_empty() {
                    0
                } else {
                    listed.len()
                }
            );
            let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
            let mut expected = vec!["todo_write", "job_output", "job_list", "job_kill", "bash"];
            if terminal {
                expected.extend(["terminal_start", "terminal_send", "terminal_kill"]);
            }
            expected.extend(["schedule_create", "schedule_list", "schedule_delete"]);
            assert_eq!(names, expected, "{config}");
        }
    }
}

#[tokio::test]
async fn structured_option_adds_output_schemas_and_structured_content() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "s1", &config(), &["--structured"]).await;
    let tools = server.client.list_all_tools().await.unwrap();
    let todo = serde_json::to_value(&tools[0]).unwrap();
    let catalog = turnkit_families::catalog(
        &turnkit_families::FamiliesConfig::defaults(),
        turnkit_families::ChildrenMode::Without,
    )
    .unwrap();
    let mut schema = todo["outputSchema"].clone();
    let owed = schema["properties"]
        .as_object_mut()
        .unwrap()
        .remove("harnessMessages");
    assert_eq!(owed.unwrap()["type"], "array");
    assert_eq!(schema, catalog[0].output_schema.clone().unwrap());
    let result = server
        .call(
            "todo_write",
            json!({"todos": [{"content": "Ship", "status": "in_progress"}]}),
        )
        .await;
    assert_eq!(
        result,
        json!({
            "content": [{"type": "text", "text": "Updated todo list: 0 pending, 1 in progress, 0 completed."}],
            "structuredContent": {
                "todos": [{"content": "Ship", "status": "in_progress"}],
                "counts": {"pending": 0, "inProgress": 1, "completed": 0},
            },
            "isError": false,
        })
    );
    server.stop().await;
}

#[tokio::test]
async fn every_tool_answers_with_its_exact_text() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "s1", &config(), &[]).await;
    assert_eq!(
        server
            .call(
                "todo_write",
                json!({"todos": [{"content": "Ship it", "status": "in_progress"}]})
            )
            .await,
        json!({
            "content": [{"type": "text", "text": "Updated todo list: 0 pending, 1 in progress, 0 completed."}],
            "isError": false,
        })
    );
    assert_eq!(
        server.call("todo_write", json!({"todos": 5})).await,
        json!({
            "content": [{"type": "text", "text": "Error: invalid arguments: \"todos\" must be an array"}],
            "isError": true,
        })
    );
    assert_eq!(
        server.texts("job_list", json!({})).await,
        ["(no background jobs)"]
    );
    assert_eq!(
        server
            .texts("bash", json!({"command": "printf 'hi\\n'"}))
            .await,
        ["hi\n[status: completed, exit code: 0]"]
    );
    assert_eq!(
        server
            .texts(
                "bash",
                json!({"command": "sleep 30", "run_in_background": true})
            )
            .await,
        ["started background job bash-2"]
    );
    assert_eq!(
        server
            .texts("job_output", json!({"job_id": "bash-2"}))
            .await,
        ["(no new output)\n[status: running]"]
    );
    assert_eq!(
        server.texts("job_kill", json!({"job_id": "bash-2"})).await,
        ["requested cancellation of job bash-2"]
    );
    assert_eq!(
        server
            .texts("job_output", json!({"job_id": "nope-1"}))
            .await,
        ["Error: unknown job nope-1"]
    );
    let created = server
        .call(
            "schedule_create",
            json!({"prompt": "check the deploy", "after_seconds": 3600}),
        )
        .await;
    let value: Value = serde_json::from_str(&texts(&created)[0]).unwrap();
    assert_eq!(value["id"], "schedule-1");
    assert_eq!(value["state"], "scheduled");
    let listed: Value =
        serde_json::from_str(&server.texts("schedule_list", json!({})).await[0]).unwrap();
    assert_eq!(listed, json!([value]));
    assert_eq!(
        server
            .texts("schedule_delete", json!({"id": "schedule-1"}))
            .await,
        [r#"{"id":"schedule-1","deleted":true}"#]
    );
    // Schedule's domain errors are successful values, as in-process.
    assert_eq!(
        server
            .call("schedule_delete", json!({"id": "schedule-9"}))
            .await["isError"],
        false
    );
    server.stop().await;
}
