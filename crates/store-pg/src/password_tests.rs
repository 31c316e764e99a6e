use std::os::unix::fs::PermissionsExt as _;

use pretty_assertions::assert_eq;

use super::*;

fn key(host: &str, port: u16, database: &str, user: &str) -> PassKey {
    PassKey {
        host: host.to_owned(),
        port,
        database: database.to_owned(),
        user: user.to_owned(),
    }
}

fn found(file: &PassFile, key: &PassKey) -> Option<String> {
    file.lookup(key).map(|p| p.expose().to_owned())
}

#[test]
fn the_first_matching_line_wins_and_stars_match_anything() {
    let file = PassFile::parse(
        "# comment:*:*:*:nope\n\
         db.example:5433:app:alice:first\n\
         *:*:app:alice:second\n\
         *:*:*:*:fallback\n",
    );
    assert_eq!(
        found(&file, &key("db.example", 5433, "app", "alice")),
        Some("first".to_owned())
    );
    assert_eq!(
        found(&file, &key("db.example", 5432, "app", "alice")),
        Some("second".to_owned())
    );
    assert_eq!(
        found(&file, &key("other", 1, "x", "bob")),
        Some("fallback".to_owned())
    );
}

#[test]
fn backslash_escapes_colons_and_backslashes_in_every_field() {
    let file = PassFile::parse("h\\:1:5432:d\\\\b:u:pa\\:ss\\\\word:ignored\n");
    assert_eq!(
        found(&file, &key("h:1", 5432, "d\\b", "u")),
        Some("pa:ss\\word".to_owned())
    );
    // An escaped star is a literal star, not a wildcard.
    let file = PassFile::parse("\\*:*:*:*:pw\n");
    assert_eq!(found(&file, &key("host", 5432, "d", "u")), None);
    assert_eq!(
        found(&file, &key("*", 5432, "d", "u")),
        Some("pw".to_owned())
    );
}

#[test]
fn short_lines_and_crlf_endings() {
    let file = PassFile::parse("h:5432:d:u\r\nh:5432:d:u:pw\r\n");
    assert_eq!(
        found(&file, &key("h", 5432, "d", "u")),
        Some("pw".to_owned())
    );
    assert_eq!(format!("{file:?}"), "PassFile(1 lines)");
}

#[test]
fn keys_follow_libpq_defaults() {
    assert_eq!(
        PassKey::of_url("postgresql://alice@db.example:6543/app"),
        Some(key("db.example", 6543, "app", "alice"))
    );
    // A socket in the default folder is `localhost`; the database defaults to the user.
    assert_eq!(
        PassKey::of_url("host=/var/run/postgresql user=bob"),
        Some(key("localhost", 5432, "bob", "bob"))
    );
    assert_eq!(
        PassKey::of_url("postgresql://bob@%2Fsrv%2Fpg/x"),
        Some(key("/srv/pg", 5432, "x", "bob"))
    );
}

#[test]
fn passwords_in_urls_are_seen_and_never_debug_printed() {
    assert!(url_has_password("postgresql://u:secret@h/d"));
    assert!(url_has_password("host=h user=u password=secret"));
    assert!(!url_has_password("postgresql://u@h/d"));
    assert_eq!(
        url_socket_folders("postgresql://u@%2Fsrv%2Fpg/d"),
        vec![std::path::PathBuf::from("/srv/pg")]
    );
    assert_eq!(
        url_socket_folders("postgresql://u@h/d"),
        Vec::<std::path::PathBuf>::new()
    );
    assert_eq!(format!("{:?}", PgPassword::new("secret")), "PgPassword(…)");
}

#[test]
fn a_file_others_may_read_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pgpass");
    std::fs::write(&path, "*:*:*:*:pw\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(PassFile::read(&path).unwrap(), None);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let file = PassFile::read(&path).unwrap().unwrap();
    assert_eq!(found(&file, &key("h", 1, "d", "u")), Some("pw".to_owned()));
    assert_eq!(PassFile::read(&dir.path().join("absent")).unwrap(), None);
    assert_eq!(PassFile::read(dir.path()).unwrap(), None);
}

#[test]
fn a_password_file_gives_its_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pw");
    std::fs::write(&path, "s3cret\nnext\n").unwrap();
    assert_eq!(
        PgPassword::read_file(&path).unwrap(),
        Some(PgPassword::new("s3cret"))
    );
    std::fs::write(&path, "\n").unwrap();
    assert_eq!(PgPassword::read_file(&path).unwrap(), None);
}
