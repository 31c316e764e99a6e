//! The main demo. Until the families land it plays a short scenario on the in-memory host.
#![expect(clippy::print_stdout, reason = "an example prints its transcript")]

fn main() {
    let transcript = harness_testkit::scenario::run_scenario(
        r#"{"do":"session","id":"demo"}
{"do":"user","session":"demo","text":"Plan the release."}
{"do":"log","session":"demo"}
"#,
    );
    print!("{}", transcript.to_text());
}
