//! proptest strategies shared by the families' bad-input tests.

use proptest::prelude::*;
use serde_json::Value;

/// Arbitrary JSON up to three levels deep, biased toward what tool arguments look like:
/// leaves are null, booleans, integers, finite floats, short strings with JavaScript-only
/// whitespace (U+FEFF, U+3000), and the given `words` (e.g. valid and invalid enum values);
/// object keys are drawn from `keys` (the schema's property names) or are short random names.
pub fn arb_json(
    keys: &'static [&'static str],
    words: &'static [&'static str],
) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[ a-z\u{FEFF}\u{3000}]{0,6}".prop_map(Value::from),
        prop::sample::select(words).prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    prop::sample::select(keys).prop_map(str::to_owned),
                    "[a-z]{1,4}"
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
