use http::{HeaderMap, HeaderValue, header};
use pretty_assertions::assert_eq;

use super::{Tokens, bearer, check_token};

#[test]
fn the_bearer_scheme_word_is_matched_in_any_case() {
    let cases: [(&[u8], Option<&[u8]>); 9] = [
        (b"Bearer abc", Some(b"abc")),
        (b"bearer abc", Some(b"abc")),
        (b"BEARER abc", Some(b"abc")),
        (b"bEaReR   abc", Some(b"abc")),
        (b"Bearer", None),
        (b"Bearer ", None),
        (b"Bearerabc", None),
        (b"Basic abc", None),
        (b"Bear abc", None),
    ];
    for (value, expected) in cases {
        assert_eq!(
            (String::from_utf8_lossy(value), bearer(value)),
            (String::from_utf8_lossy(value), expected)
        );
    }
}

#[test]
fn a_token_passes_as_its_index_in_the_file_and_only_on_its_prefixes() {
    let tokens =
        Tokens::parse("# team\nteam-token-0123456789\nci-token-0123456789ab ci-\n").unwrap();
    let with = |value: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    };
    let passed = |value: &str, session: &str| {
        check_token(&with(value), Some(&tokens), session).map_err(|r| r.error)
    };
    assert_eq!(passed("Bearer team-token-0123456789", "any"), Ok(0));
    assert_eq!(passed("bearer ci-token-0123456789ab", "ci-7"), Ok(1));
    assert_eq!(
        passed("Bearer ci-token-0123456789ab", "other"),
        Err("forbidden")
    );
    assert_eq!(
        passed("Bearer team-token-012345678", "any"),
        Err("unauthorized")
    );
    assert_eq!(
        check_token(&HeaderMap::new(), Some(&tokens), "any").map_err(|r| r.error),
        Err("unauthorized")
    );
    // Without tokens (`--no-auth`) everything passes, as token 0.
    assert_eq!(
        check_token(&HeaderMap::new(), None, "any").map_err(|r| r.error),
        Ok(0)
    );
}
