use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_subagent::SubagentConfig;

#[test]
fn defaults_and_camel_case_keys() {
    let config = SubagentConfig::from_json(json!({})).unwrap();
    assert_eq!(config, SubagentConfig::default());
    assert_eq!(
        (
            config.max_concurrent_per_agent,
            config.max_spawns_per_session
        ),
        (4, 32)
    );
    let config =
        SubagentConfig::from_json(json!({"maxConcurrentPerAgent": 1, "maxSpawnsPerSession": 2}))
            .unwrap();
    assert_eq!(
        config,
        SubagentConfig::default()
            .with_max_concurrent_per_agent(1)
            .with_max_spawns_per_session(2)
    );
}

#[test]
fn zero_caps_and_unknown_keys_are_refused() {
    let message = |value| SubagentConfig::from_json(&value).unwrap_err().to_string();
    assert_eq!(
        message(json!({"maxConcurrentPerAgent": 0})),
        "subagent: maxConcurrentPerAgent (0) must be at least 1"
    );
    assert_eq!(
        message(json!({"maxSpawnsPerSession": 0})),
        "subagent: maxSpawnsPerSession (0) must be at least 1"
    );
    assert_eq!(
        message(json!({"maxDepth": 0})),
        "subagent: maxDepth (0) must be at least 1"
    );
    assert!(
        message(json!({"depth": 2})).starts_with("subagent: unknown field `depth`"),
        "{}",
        message(json!({"depth": 2}))
    );
}
