use pretty_assertions::assert_eq;
use serde_json::json;

use super::{null_as_absent, object_rooted, strict_schema};

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
fn only_a_non_object_root_is_wrapped() {
    let object = json!({"type": "object", "properties": {}});
    assert_eq!(object_rooted(&object), (object.clone(), false));
    assert_eq!(
        object_rooted(&json!({"type": "array"})),
        (
            json!({"type": "object", "properties": {"value": {"type": "array"}}, "required": ["value"]}),
            true
        )
    );
}
