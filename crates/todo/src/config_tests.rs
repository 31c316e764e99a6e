//! Unit tests of the configuration (C-021).

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::ConfigError;

use super::*;

#[test]
fn config_is_required_and_typed() {
    let cases = [
        (
            json!({}),
            "tool-todo: $.allowParallelInProgress missing required value",
        ),
        (
            json!({"allowParallelInProgress": "no"}),
            "tool-todo: $.allowParallelInProgress expected boolean",
        ),
        (
            json!({"allowParallelInProgress": null}),
            "tool-todo: $.allowParallelInProgress expected boolean",
        ),
        (json!(null), "tool-todo: $ expected object"),
        (json!([true]), "tool-todo: $ expected object"),
        (
            json!({"allowParallelInProgress": true, "extra": 1}),
            "tool-todo: unknown field `extra`, expected `allowParallelInProgress`",
        ),
    ];
    for (value, message) in cases {
        assert_eq!(
            TodoConfig::from_json(&value),
            Err(ConfigError::Invalid(message.to_owned())),
            "{value}"
        );
    }
}

#[test]
fn decodes_both_values() {
    for flag in [true, false] {
        let config = TodoConfig::from_json(json!({ "allowParallelInProgress": flag })).unwrap();
        assert_eq!(
            config,
            TodoConfig {
                allow_parallel_in_progress: flag
            }
        );
        assert_eq!(config.policy(), InProgressPolicy::from_allow_parallel(flag));
        assert_eq!(
            serde_json::to_value(config).unwrap(),
            json!({ "allowParallelInProgress": flag })
        );
    }
    assert_eq!(
        TodoConfig {
            allow_parallel_in_progress: false
        }
        .policy(),
        InProgressPolicy::Single
    );
    assert_eq!(
        TodoConfig {
            allow_parallel_in_progress: true
        }
        .policy(),
        InProgressPolicy::Parallel
    );
}
