use pretty_assertions::assert_eq;

use super::check_json_rpc;

#[test]
fn only_a_json_rpc_message_or_a_batch_of_them_is_a_well_formed_body() {
    let cases: [(&str, bool); 10] = [
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, true),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            true,
        ),
        (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, true),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]"#,
            true,
        ),
        ("[]", false),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"id":2}]"#, false),
        (r#"{"jsonrpc":"1.0","id":1,"method":"a"}"#, false),
        (r#"{"id":1,"method":"a"}"#, false),
        ("not json", false),
        ("", false),
    ];
    for (body, expected) in cases {
        assert_eq!(
            (body, check_json_rpc(body.as_bytes()).is_ok()),
            (body, expected)
        );
    }
}
