use pretty_assertions::assert_eq;

use super::*;

fn policy(value: serde_json::Value) -> NetworkPolicy {
    serde_json::from_value(value).unwrap()
}

#[test]
fn an_exact_name_matches_itself_only_without_case_or_trailing_dot() {
    let policy = NetworkPolicy::allowing(["localhost"]);
    assert_eq!(policy.check("localhost", 8080), Verdict::Allowed);
    assert_eq!(policy.check("LocalHost.", 1), Verdict::Allowed);
    assert_eq!(policy.check("127.0.0.1", 8080), Verdict::NotAllowed);
    assert_eq!(policy.check("a.localhost", 8080), Verdict::NotAllowed);
    assert_eq!(policy.check("localhost.evil.org", 80), Verdict::NotAllowed);
}

#[test]
fn a_wildcard_matches_names_below_it_not_itself_nor_lookalikes() {
    let policy = NetworkPolicy::allowing(["*.example.org"]);
    assert_eq!(policy.check("a.example.org", 443), Verdict::Allowed);
    assert_eq!(policy.check("a.b.EXAMPLE.org", 443), Verdict::Allowed);
    assert_eq!(policy.check("example.org", 443), Verdict::NotAllowed);
    assert_eq!(policy.check("badexample.org", 443), Verdict::NotAllowed);
    assert_eq!(policy.check(".example.org", 443), Verdict::NotAllowed);
}

#[test]
fn deny_wins_over_a_wildcard_and_ports_bind_allowed_names() {
    let policy = policy(serde_json::json!({
        "allow": ["*.example.org", "localhost"],
        "deny": ["*.secret.example.org", "leak.example.org"],
        "ports": [443, 8080]
    }));
    assert_eq!(policy.validate(), Ok(()));
    assert_eq!(policy.check("docs.example.org", 443), Verdict::Allowed);
    assert_eq!(policy.check("leak.example.org", 443), Verdict::Denied);
    assert_eq!(policy.check("x.secret.example.org", 443), Verdict::Denied);
    assert_eq!(policy.check("localhost", 22), Verdict::PortNotAllowed);
    // A denied name is reported as denied whatever the port.
    assert_eq!(policy.check("leak.example.org", 22), Verdict::Denied);
}

#[test]
fn addresses_match_only_as_listed_with_or_without_brackets() {
    let policy = NetworkPolicy::allowing(["127.0.0.1", "::1"]);
    assert_eq!(policy.validate(), Ok(()));
    assert_eq!(policy.check("127.0.0.1", 80), Verdict::Allowed);
    assert_eq!(policy.check("[::1]", 80), Verdict::Allowed);
    assert_eq!(policy.check("::1", 80), Verdict::Allowed);
    assert_eq!(policy.check("127.0.0.2", 80), Verdict::NotAllowed);
}

#[test]
fn configuration_errors_name_the_key_and_the_entry() {
    let cases = [
        (
            serde_json::json!({}),
            "sandbox.network.allow: no host names (use \"network\": false for no network)",
        ),
        (
            serde_json::json!({"allow": ["exa mple.org"]}),
            "sandbox.network.allow: \"exa mple.org\" is not a host name, an address or *.name",
        ),
        (
            serde_json::json!({"allow": ["*"]}),
            "sandbox.network.allow: \"*\" is not a host name, an address or *.name",
        ),
        (
            serde_json::json!({"allow": ["ok.org"], "deny": ["a.*.org"]}),
            "sandbox.network.deny: \"a.*.org\" is not a host name, an address or *.name",
        ),
        (
            serde_json::json!({"allow": ["ok.org"], "ports": [0]}),
            "sandbox.network.ports: 0 is not a port (1-65535)",
        ),
    ];
    for (value, message) in cases {
        assert_eq!(policy(value).validate(), Err(message.to_owned()));
    }
    let unknown = serde_json::from_value::<NetworkPolicy>(serde_json::json!({"hosts": []}));
    assert_eq!(
        unknown.unwrap_err().to_string(),
        "unknown field `hosts`, expected one of `allow`, `deny`, `ports`"
    );
}

#[test]
fn the_summary_counts_by_target_most_refused_first() {
    let refusals = Refusals::new();
    assert_eq!(refusals.summary(), None);
    refusals.refuse("127.0.0.1", 8080);
    assert_eq!(
        refusals.summary().as_deref(),
        Some("network: 1 connection refused (127.0.0.1:8080)")
    );
    for _ in 0..3 {
        refusals.refuse("example.com", 443);
    }
    refusals.refuse("::1", 22);
    assert_eq!(refusals.total(), 5);
    assert_eq!(
        refusals.summary().as_deref(),
        Some("network: 5 connections refused (example.com:443 ×3, 127.0.0.1:8080, [::1]:22)")
    );
    refusals.refuse("b.org", 80);
    assert_eq!(
        refusals.summary().as_deref(),
        Some("network: 6 connections refused (example.com:443 ×3, 127.0.0.1:8080, [::1]:22, …)")
    );
}

#[test]
fn the_issue_example_line_is_exact() {
    let refusals = Refusals::new();
    for _ in 0..3 {
        refusals.refuse("example.com", 443);
    }
    assert_eq!(
        refusals.summary().as_deref(),
        Some("network: 3 connections refused (example.com:443 ×3)")
    );
}

#[test]
fn the_network_key_takes_false_true_a_list_or_a_policy() {
    let parse = |value: serde_json::Value| serde_json::from_value::<Network>(value);
    assert_eq!(parse(serde_json::json!(false)).unwrap(), Network::Off);
    assert_eq!(parse(serde_json::json!(true)).unwrap(), Network::On);
    assert_eq!(
        parse(serde_json::json!(["localhost", "*.crates.io"])).unwrap(),
        Network::ByName(NetworkPolicy::allowing(["localhost", "*.crates.io"]))
    );
    let object =
        parse(serde_json::json!({"allow": ["a.org"], "deny": ["b.a.org"], "ports": [443]}));
    assert_eq!(
        object.unwrap(),
        Network::ByName(NetworkPolicy {
            allow: vec!["a.org".to_owned()],
            deny: vec!["b.a.org".to_owned()],
            ports: vec![443],
        })
    );
    let expected =
        "false, true, a list of host names or {\"allow\": […], \"deny\": […], \"ports\": […]}";
    assert_eq!(
        parse(serde_json::json!("on")).unwrap_err().to_string(),
        format!("invalid type: string \"on\", expected {expected}")
    );
    assert_eq!(
        parse(serde_json::json!([1])).unwrap_err().to_string(),
        "invalid type: integer `1`, expected a string"
    );
    // Round trip: what is written is read back the same.
    for network in [
        Network::Off,
        Network::On,
        Network::ByName(NetworkPolicy::allowing(["x.org"])),
    ] {
        let text = serde_json::to_value(&network).unwrap();
        assert_eq!(parse(text).unwrap(), network);
    }
}

#[test]
fn a_sandbox_with_a_bad_policy_is_refused_naming_the_key() {
    let sandbox: crate::Sandbox = serde_json::from_value(serde_json::json!({
        "network": {"allow": ["ok.org"], "deny": ["bad name"]}
    }))
    .unwrap();
    assert_eq!(
        sandbox.validate(),
        Err(
            "sandbox.network.deny: \"bad name\" is not a host name, an address or *.name"
                .to_owned()
        )
    );
    let empty: crate::Sandbox = serde_json::from_value(serde_json::json!({"network": []})).unwrap();
    assert_eq!(
        crate::probe_sandbox(&empty).unwrap_err().0,
        "sandbox.network.allow: no host names (use \"network\": false for no network)"
    );
}
