use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{null_as_absent, object_rooted, object_rooted_value, strict_schema};

#[test]
fn an_optional_enum_accepts_null_in_its_type_and_its_values() {
    let schema = json!({"type": "object", "properties": {
        "mode": {"type": "string", "enum": ["a", "b"]},
        "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}
    }});
    assert_eq!(
        strict_schema(&schema),
        json!({"type": "object", "properties": {
            "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
            "tags": {"type": ["array", "null"], "items": {
                "type": "object",
                "properties": {"k": {"type": ["string", "null"]}},
                "required": ["k"],
                "additionalProperties": false
            }}
        }, "required": ["mode", "tags"], "additionalProperties": false})
    );
}

#[test]
fn nulls_inside_array_items_and_one_of_branches_are_dropped_when_optional() {
    let schema = json!({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"]}},
        "at": {"oneOf": [{"type": "string"}, {"type": "object",
            "properties": {"zone": {"type": "string"}}}]}
    }, "required": ["items"]});
    let arguments = json!({
        "items": [{"a": null, "b": null}],
        "at": {"zone": null},
        "undeclared": null
    });
    assert_eq!(
        null_as_absent(&schema, arguments),
        json!({"items": [{"a": null}], "at": {}, "undeclared": null})
    );
}

#[test]
fn only_a_schema_with_non_object_values_is_wrapped() {
    let object = json!({"type": "object", "properties": {}});
    assert_eq!(object_rooted(&object), (object.clone(), false));
    let union = json!({"oneOf": [{"type": "object"}, {"type": "object", "required": ["a"]}]});
    assert_eq!(
        object_rooted(&union),
        (
            json!({"type": "object", "oneOf": [{"type": "object"}, {"type": "object", "required": ["a"]}]}),
            false
        )
    );
    let wrapped = |inner: Value| json!({"type": "object", "properties": {"value": inner}, "required": ["value"], "additionalProperties": false});
    assert_eq!(
        object_rooted(&json!({"type": "array"})),
        (wrapped(json!({"type": "array"})), true)
    );
    let mixed = json!({"oneOf": [{"type": "array"}, {"type": "object"}]});
    assert_eq!(object_rooted(&mixed), (wrapped(mixed.clone()), true));
    assert_eq!(
        object_rooted(&json!({"oneOf": []})),
        (wrapped(json!({"oneOf": []})), true)
    );
    assert_eq!(
        object_rooted_value(&json!({"code": "x"}), true),
        json!({"value": {"code": "x"}})
    );
    assert_eq!(
        object_rooted_value(&json!({"code": "x"}), false),
        json!({"code": "x"})
    );
}

/// With several object branches, a `null` is dropped by the branch the value is written
/// for (the one that validates once its optional nulls are gone), not always by the first
/// object branch: before, `{"url": …, "timeout": null}` kept its `null` (the first branch
/// does not declare `timeout`) and failed validation, and a `null` for `path`, required in
/// the second branch, was dropped by the first (where it is optional).
#[test]
fn nulls_are_dropped_by_the_object_branch_the_value_fits() {
    let schema = json!({"type": "object", "properties": {"target": {"oneOf": [
        {"type": "object", "additionalProperties": false, "required": ["file"],
         "properties": {"file": {"type": "string"}, "path": {"type": "string"}}},
        {"type": "object", "additionalProperties": false, "required": ["url", "path"],
         "properties": {"url": {"type": "string"}, "path": {"type": "string"},
                        "timeout": {"type": "number"}}}
    ]}}, "required": ["target"]});
    let second = null_as_absent(
        &schema,
        json!({"target": {"url": "u", "path": "p", "timeout": null}}),
    );
    assert_eq!(second, json!({"target": {"url": "u", "path": "p"}}));
    assert_eq!(crate::validate_arguments(&schema, &second), Ok(()));
    let first = null_as_absent(&schema, json!({"target": {"file": "f", "path": null}}));
    assert_eq!(first, json!({"target": {"file": "f"}}));
    // Fits no branch either way: left as the first object branch strips it.
    let neither = null_as_absent(&schema, json!({"target": {"url": "u", "path": null}}));
    assert_eq!(neither, json!({"target": {"url": "u"}}));
    // An array branch is walked too.
    let listed = json!({"type": "object", "properties": {"targets": {"anyOf": [
        {"type": "string"},
        {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "number"}}}}
    ]}}});
    assert_eq!(
        null_as_absent(&listed, json!({"targets": [{"n": null}]})),
        json!({"targets": [{}]})
    );
}

/// An optional property without a `type`, `enum` or branches, or with a `const`, still
/// accepts `null` in strict form (before, it became required with no way to leave it out:
/// `{"const": "a"}` stayed as is in `required`).
#[test]
fn an_optional_property_without_a_type_or_with_a_const_accepts_null_as_a_branch() {
    let schema = json!({"type": "object", "properties": {
        "x": {"const": "a"},
        "y": {"description": "anything"},
        "z": {"type": "string", "const": "b"},
        "w": {"type": "string", "const": "c"}
    }, "required": ["w"]});
    assert_eq!(
        strict_schema(&schema),
        json!({"type": "object", "properties": {
            "x": {"anyOf": [{"const": "a"}, {"type": "null"}]},
            "y": {"anyOf": [{"description": "anything"}, {"type": "null"}]},
            "z": {"anyOf": [{"type": "string", "const": "b"}, {"type": "null"}]},
            "w": {"type": "string", "const": "c"}
        }, "required": ["x", "y", "z", "w"], "additionalProperties": false})
    );
}
