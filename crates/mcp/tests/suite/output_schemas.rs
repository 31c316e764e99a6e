//! Every structured result validates against the output schema its tool declares, as a client
//! that checks `structuredContent` against `outputSchema` (Claude Code does) sees it: every
//! tool, every branch (foreground, background, domain errors, owed messages riding along), in
//! every protocol era, through a real JSON Schema validator (drafts 7 and 2020-12). A task's
//! result (the completion a client that declared tasks receives) is text only.
//!
//! The server is a real child process on the wall clock, so a wait here polls what it answers
//! with a short pause, bounded by a deadline; no pause stands in for an in-process event.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::suite::support::BOUND;
use crate::suite::tasks::{Raw, meta};

/// How a client opens the server.
#[derive(Clone, Copy, Debug)]
enum Era {
    /// `initialize` at this version, then `notifications/initialized`.
    Initialize(&'static str),
    /// `server/discover` (2026-07-28), every request with its own `_meta`; `tasks`: the
    /// client declares the tasks extension.
    Discover { tasks: bool },
}

const ERAS: [Era; 6] = [
    Era::Initialize("2024-11-05"),
    Era::Initialize("2025-03-26"),
    Era::Initialize("2025-06-18"),
    Era::Initialize("2025-11-25"),
    Era::Discover { tasks: false },
    Era::Discover { tasks: true },
];

/// One client of one era over a `--structured` server with the terminal family on.
struct Client {
    raw: Raw,
    era: Era,
    /// Each tool's declared output schema, from `tools/list`.
    schemas: BTreeMap<String, Value>,
    /// Every result checked: `(tool, what the call was)`.
    checked: Vec<(String, String)>,
    /// The results that carried owed messages, by tool.
    owed: Vec<String>,
}

fn violations(schema: &Value, instance: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for (draft, validator) in [
        ("draft 7", jsonschema::draft7::new(schema).unwrap()),
        (
            "draft 2020-12",
            jsonschema::draft202012::new(schema).unwrap(),
        ),
    ] {
        found.extend(
            validator
                .iter_errors(instance)
                .map(|e| format!("{draft}: {} at {}", e, e.instance_path())),
        );
    }
    found
}

impl Client {
    async fn open(dir: &std::path::Path, era: Era) -> Self {
        std::fs::create_dir_all(dir.join("work")).unwrap();
        let config = json!({
            "todo": {"allowParallelInProgress": false},
            "terminal": {},
            "bash": {"cwd": dir.join("work")},
        });
        let mut command = Raw::command(dir, "s", &config, None);
        command.arg("--structured");
        let mut raw = Raw::spawn(command, None);
        match era {
            Era::Initialize(version) => {
                let reply = raw
                    .request(
                        "initialize",
                        json!({"protocolVersion": version, "capabilities": {},
                            "clientInfo": {"name": "schema-check", "version": "1"}}),
                    )
                    .await;
                assert_eq!(reply["result"]["protocolVersion"], version);
                raw.notify("notifications/initialized").await;
            }
            Era::Discover { tasks } => {
                let reply = raw.discover(tasks).await;
                assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
            }
        }
        let mut client = Self {
            raw,
            era,
            schemas: BTreeMap::new(),
            checked: Vec::new(),
            owed: Vec::new(),
        };
        let listed = client.request("tools/list", json!({})).await;
        for tool in listed["result"]["tools"].as_array().unwrap() {
            let schema = tool["outputSchema"].clone();
            assert_eq!(schema["type"], "object", "{era:?}: {}", tool["name"]);
            client
                .schemas
                .insert(tool["name"].as_str().unwrap().to_owned(), schema);
        }
        client
    }

    fn tasks(&self) -> bool {
        matches!(self.era, Era::Discover { tasks: true })
    }

    async fn request(&mut self, method: &str, mut params: Value) -> Value {
        if let Era::Discover { tasks } = self.era {
            params["_meta"] = meta(tasks);
        }
        self.raw.request(method, params).await
    }

    /// Calls `tool` and checks its result (and, for a task, the task's result) against the
    /// declared schema; returns the result (a task's once it completed).
    async fn call(&mut self, tool: &str, arguments: Value, what: &str) -> Value {
        let reply = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await;
        let result = reply["result"].clone();
        assert!(
            reply.get("error").is_none(),
            "{:?} {tool} {what}: {reply}",
            self.era
        );
        if result["resultType"] == "task" {
            assert!(self.tasks(), "{:?}: an undeclared task: {reply}", self.era);
            let task = result["taskId"].as_str().unwrap().to_owned();
            self.checked
                .push((tool.to_owned(), format!("{what}, as a task")));
            // A reminder's task completes when it is due; a job's when the job ends.
            if tool != "bash" {
                return result;
            }
            let settled = self.raw.settled(&task).await;
            let result = settled["result"].clone();
            // A task's result is the completion delivered to the model (its notice and the
            // job's output), not the call's value: text only, as Claude Code reads it.
            assert_eq!(result["isError"], false, "{settled}");
            assert!(result.get("structuredContent").is_none(), "{settled}");
            return result;
        }
        self.check(tool, &result, what);
        result
    }

    /// What Claude Code checks: a result that is not an error has `structuredContent` (its
    /// tool declares an output schema), and any `structuredContent` validates.
    fn check(&mut self, tool: &str, result: &Value, what: &str) {
        let era = self.era;
        let schema = &self.schemas[tool];
        let structured = result.get("structuredContent");
        if result["isError"] != true {
            assert!(
                structured.is_some(),
                "{era:?} {tool} {what}: no structuredContent: {result}"
            );
        }
        if let Some(structured) = structured {
            let found = violations(schema, structured);
            assert!(
                found.is_empty(),
                "{era:?} {tool} {what}: {structured} breaks {schema}: {found:?}"
            );
            if structured.get(turnkit_mcp::OWED_FIELD).is_some() {
                self.owed.push(tool.to_owned());
            }
        }
        self.checked.push((tool.to_owned(), what.to_owned()));
    }

    /// Calls `tool` until its result carries owed messages (a job started before settles
    /// meanwhile), bounded by [`BOUND`].
    async fn call_until_owed(&mut self, tool: &str, arguments: Value, what: &str) {
        let deadline = tokio::time::Instant::now() + BOUND;
        loop {
            let result = self.call(tool, arguments.clone(), what).await;
            if result["structuredContent"]
                .get(turnkit_mcp::OWED_FIELD)
                .is_some()
            {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{:?}: nothing owed reached {tool}",
                self.era
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The id after `prefix` in the first text of `result` (`started background job bash-1`).
fn id_after(result: &Value, prefix: &str) -> String {
    let text = text(result);
    text.split(prefix)
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {prefix:?} in {text:?}"))
        .trim_end_matches('.')
        .to_owned()
}

#[tokio::test]
async fn every_structured_result_validates_against_its_declared_schema_in_every_era() {
    for era in ERAS {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Client::open(dir.path(), era).await;
        c.call(
            "todo_write",
            json!({"todos": [{"content": "Ship", "status": "in_progress"}]}),
            "valid",
        )
        .await;
        c.call(
            "todo_write",
            json!({"todos": [{"content": "Ship", "status": "bogus"}]}),
            "invalid",
        )
        .await;
        c.call("bash", json!({"command": "echo hi"}), "foreground")
            .await;
        c.call("bash", json!({"command": "exit 3"}), "foreground failed")
            .await;
        c.call(
            "bash",
            json!({"command": "sleep 30", "timeout_ms": 100}),
            "foreground timed out",
        )
        .await;
        c.call("job_list", json!({}), "empty").await;
        let started = c
            .call(
                "bash",
                json!({"command": "echo bg", "run_in_background": true}),
                "background",
            )
            .await;
        // Under tasks the started job's notice went to its task; other eras read its id.
        if !c.tasks() {
            let job = id_after(&started, "started background job ");
            c.call("job_output", json!({"job_id": job, "wait": true}), "waited")
                .await;
            c.call("job_output", json!({"job_id": job}), "settled")
                .await;
            c.call("job_kill", json!({"job_id": job}), "already finished")
                .await;
        }
        c.call("job_output", json!({"job_id": "bash-99"}), "unknown")
            .await;
        c.call("job_kill", json!({"job_id": "bash-99"}), "unknown")
            .await;
        if !c.tasks() {
            let running = c
                .call(
                    "bash",
                    json!({"command": "sleep 30", "run_in_background": true}),
                    "background running",
                )
                .await;
            let job = id_after(&running, "started background job ");
            c.call("job_list", json!({}), "running").await;
            c.call("job_output", json!({"job_id": job}), "running")
                .await;
            c.call("job_kill", json!({"job_id": job}), "running").await;
            // A job that settles unread owes a notice to the next results; it is let end
            // only once its start was answered.
            for (round, tool, arguments) in [
                ("go-1", "schedule_list", json!({})),
                ("go-2", "bash", json!({"command": "true"})),
            ] {
                c.call(
                    "bash",
                    json!({"command": format!("until [ -e {round} ]; do sleep 0.01; done"),
                        "run_in_background": true}),
                    "background",
                )
                .await;
                std::fs::write(dir.path().join("work").join(round), "").unwrap();
                c.call_until_owed(tool, arguments, "with owed messages")
                    .await;
            }
        }
        let created = c
            .call(
                "schedule_create",
                json!({"prompt": "Check", "after_seconds": 3600}),
                "after",
            )
            .await;
        c.call(
            "schedule_create",
            json!({"prompt": "Check", "every_seconds": 3600}),
            "every",
        )
        .await;
        c.call(
            "schedule_create",
            json!({"prompt": "Check", "at": "2099-01-01T09:00:00Z"}),
            "at",
        )
        .await;
        c.call(
            "schedule_create",
            json!({"prompt": "Check", "at": {"date": "2099-01-01", "time": "09:00"}}),
            "at without a zone",
        )
        .await;
        c.call("schedule_create", json!({"prompt": "Check"}), "no selector")
            .await;
        c.call("schedule_create", json!({"prompt": 5}), "invalid arguments")
            .await;
        c.call("schedule_list", json!({}), "views").await;
        // Under tasks the created view is the task's immediate note.
        let view =
            match created["_meta"]["com.anthropic/agent-task"]["modelImmediateResponse"].as_str() {
                Some(note) => serde_json::from_str(note).unwrap(),
                None => created["structuredContent"].clone(),
            };
        let id = view["id"].as_str().unwrap().to_owned();
        c.call("schedule_delete", json!({"id": id}), "deleted")
            .await;
        c.call("schedule_delete", json!({"id": id}), "not found")
            .await;
        c.call("schedule_delete", json!({"id": ""}), "invalid")
            .await;
        let terminal = c
            .call("terminal_start", json!({"command": "cat"}), "started")
            .await;
        let terminal_id = terminal["structuredContent"]["terminalId"]
            .as_str()
            .unwrap()
            .to_owned();
        c.call(
            "terminal_send",
            json!({"terminal_id": terminal_id, "text": "hi\n", "settle_ms": 50}),
            "foreground",
        )
        .await;
        if !c.tasks() {
            c.call(
                "terminal_send",
                json!({"terminal_id": terminal_id, "text": "bg\n", "run_in_background": true}),
                "background",
            )
            .await;
        }
        c.call(
            "terminal_send",
            json!({"terminal_id": "term-99", "text": "x"}),
            "unknown",
        )
        .await;
        c.call("terminal_kill", json!({"terminal_id": terminal_id}), "kill")
            .await;
        let tools: std::collections::BTreeSet<&str> =
            c.checked.iter().map(|(t, _)| t.as_str()).collect();
        let declared: std::collections::BTreeSet<&str> =
            c.schemas.keys().map(String::as_str).collect();
        assert_eq!(tools, declared, "{era:?}: every tool was called");
        if !c.tasks() {
            for tool in ["schedule_list", "bash"] {
                assert!(c.owed.iter().any(|t| t == tool), "{era:?}: {:?}", c.owed);
            }
        }
        c.raw.stop().await;
    }
}
