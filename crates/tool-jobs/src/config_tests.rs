use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn error(value: serde_json::Value) -> String {
    ToolJobsConfig::from_json(value).unwrap_err().to_string()
}

#[test]
fn empty_config_takes_the_defaults() {
    // C-098 (configuration half).
    assert_eq!(
        ToolJobsConfig::from_json(json!({})).unwrap(),
        ToolJobsConfig {
            wait_timeout_ms: 30_000.0,
            max_wait_timeout_ms: 600_000.0,
            completion_delivery: CompletionDelivery::Wakeup,
            max_consecutive_wakes: 3.0,
        }
    );
    assert_eq!(ToolJobsConfig::default().wakes_budget(), Some(3));
}

#[test]
fn keys_use_the_spec_names() {
    let config = ToolJobsConfig::from_json(json!({
        "waitTimeoutMs": 1.5,
        "maxWaitTimeoutMs": 2,
        "completionDelivery": "quiet",
        "maxConsecutiveWakes": 7
    }))
    .unwrap();
    assert_eq!(
        config,
        ToolJobsConfig {
            wait_timeout_ms: 1.5,
            max_wait_timeout_ms: 2.0,
            completion_delivery: CompletionDelivery::Quiet,
            max_consecutive_wakes: 7.0,
        }
    );
    assert_eq!(config.wakes_budget(), Some(7));
}

#[test]
fn exact_load_time_messages() {
    assert_eq!(
        error(json!({"waitTimeoutMs": 100, "maxWaitTimeoutMs": 50})),
        "tool-jobs: waitTimeoutMs (100) exceeds maxWaitTimeoutMs (50)"
    );
    assert_eq!(
        error(json!({"waitTimeoutMs": 100.5, "maxWaitTimeoutMs": 50})),
        "tool-jobs: waitTimeoutMs (100.5) exceeds maxWaitTimeoutMs (50)"
    );
    assert_eq!(
        error(json!({"maxConsecutiveWakes": 2.5})),
        "tool-jobs: maxConsecutiveWakes (2.5) must be a whole number of turns"
    );
    let infinite = ToolJobsConfig {
        max_consecutive_wakes: f64::INFINITY,
        ..ToolJobsConfig::default()
    };
    assert_eq!(
        infinite.validate().unwrap_err().to_string(),
        "tool-jobs: maxConsecutiveWakes (Infinity) must be a whole number of turns"
    );
    assert_eq!(
        error(json!({"maxConsecutiveWakes": 9007199254740992.0})),
        "tool-jobs: maxConsecutiveWakes (9007199254740992) must be a whole number of turns"
    );
}

#[test]
fn schema_level_rejections() {
    assert_eq!(
        error(json!({"maxConsecutiveWakes": 0})),
        "tool-jobs: maxConsecutiveWakes must be a number of at least 1, got 0"
    );
    assert_eq!(
        error(json!({"waitTimeoutMs": 0})),
        "tool-jobs: waitTimeoutMs must be a finite number of at least 1, got 0"
    );
    assert_eq!(
        error(json!({"maxWaitTimeoutMs": 0.5})),
        "tool-jobs: maxWaitTimeoutMs must be a finite number of at least 1, got 0.5"
    );
    assert_eq!(
        error(json!({"completionDelivery": "loud"})),
        "tool-jobs: unknown variant `loud`, expected `wakeup` or `quiet`"
    );
    assert_eq!(
        error(json!({"waitTimeout": 5})),
        "tool-jobs: unknown field `waitTimeout`, expected one of `waitTimeoutMs`, `maxWaitTimeoutMs`, `completionDelivery`, `maxConsecutiveWakes`"
    );
    assert_eq!(
        error(json!({"maxConsecutiveWakes": "3"})),
        "tool-jobs: invalid type: string \"3\", expected f64"
    );
}
