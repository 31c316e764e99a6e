use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use turnkit_core::{RegisterError, RegistrationScope, ScopeKey, ToolOutput, ToolRegistry};

use super::echo::{echo, run};

#[tokio::test]
async fn pipeline_validates_then_renders_errors() {
    let registry = ToolRegistry::new();
    let _reg = registry
        .register(echo("echo"), RegistrationScope::Global)
        .unwrap();
    let ok = run(&registry, "echo", json!({"n": 1})).await;
    assert_eq!(ok, ToolOutput::json(json!({"n": 1})));
    let invalid = run(&registry, "echo", json!({"n": "x"})).await;
    assert_eq!(
        invalid.text(),
        "Error: invalid arguments: \"n\" must be a number"
    );
    assert!(invalid.is_error);
    assert_eq!(invalid.value, Value::Null);
    let thrown = run(&registry, "echo", json!({"n": 1, "fail": true})).await;
    assert_eq!(thrown.text(), "Error: it failed");
    let unknown = run(&registry, "nope", json!({})).await;
    assert_eq!(unknown.text(), "Error: unknown tool: nope");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let aborted = registry
        .execute("echo", json!({"n": 1}), None, cancel)
        .await;
    assert_eq!(aborted.text(), "Error: This operation was aborted");
}

#[test]
fn scopes_and_conflicts() {
    let registry = ToolRegistry::new();
    let a = ScopeKey::from("a");
    let scoped = registry
        .register(echo("t"), RegistrationScope::Scoped(a.clone()))
        .unwrap();
    let _other = registry
        .register(echo("t"), RegistrationScope::Scoped(ScopeKey::from("b")))
        .unwrap();
    assert_eq!(
        registry
            .register(echo("t"), RegistrationScope::Global)
            .err(),
        Some(RegisterError::ToolConflict("t".to_owned()))
    );
    assert_eq!(
        registry
            .register(echo("t"), RegistrationScope::Scoped(a.clone()))
            .err(),
        Some(RegisterError::ToolConflict("t".to_owned()))
    );
    assert_eq!(
        registry.definitions(Some(std::slice::from_ref(&a))).len(),
        1
    );
    assert_eq!(registry.definitions(None).len(), 0);
    scoped.unregister();
    scoped.unregister();
    assert_eq!(registry.definitions(Some(&[a])).len(), 0);
    assert_eq!(registry.all_definitions().len(), 1);
}

#[test]
fn an_agent_registration_serves_that_agent_only_not_its_descendants() {
    let root = ScopeKey::from("s1");
    let child = [ScopeKey::from("s1.agent-1"), root.clone()];
    let own = RegistrationScope::Agent(root.clone());
    assert!(own.serves(Some(std::slice::from_ref(&root))));
    assert!(!own.serves(Some(&child)));
    assert!(!own.serves(None));
    // A scoped registration of the same key serves both.
    assert!(RegistrationScope::Scoped(root.clone()).serves(Some(&child)));
    let registry = ToolRegistry::new();
    let _kept = registry
        .register(echo("t"), RegistrationScope::Agent(root.clone()))
        .unwrap();
    assert_eq!(
        registry
            .register(echo("t"), RegistrationScope::Scoped(root.clone()))
            .unwrap_err(),
        RegisterError::ToolConflict("t".to_owned())
    );
    let names = |chain: &[ScopeKey]| -> Vec<String> {
        registry
            .definitions(Some(chain))
            .into_iter()
            .map(|d| d.name)
            .collect()
    };
    assert_eq!(names(&[root]), ["t"]);
    assert_eq!(names(&child), Vec::<String>::new());
}
