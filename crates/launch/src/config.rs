//! [`LaunchConfig`]: the `launch` entry of the `harness mcp` configuration, and the command
//! line it expands to for one launch.

use std::time::Duration;

use serde::Deserialize;

use turnkit_mcp::ServeError;

/// Placeholder for the session id in an argument of [`LaunchConfig::argv`].
pub const SESSION_PLACEHOLDER: &str = "{session}";
/// Placeholder for the reminder text (the framed reminders the launch took, joined).
pub const PROMPT_PLACEHOLDER: &str = "{prompt}";
/// Placeholder for the session's MCP endpoint: the session's URL under `harness mcp --http`,
/// the session folder under `harness cron` (where `harness mcp --dir {endpoint} --session
/// {session}` serves it over stdio).
pub const ENDPOINT_PLACEHOLDER: &str = "{endpoint}";

/// What starts an agent when a reminder falls due for a session no client is connected to.
///
/// JSON (camelCase, unknown keys refused):
/// `{"argv": ["claude", "-p", "{prompt}", …], "timeoutMs": 1800000, "maxConcurrent": 2,
/// "startRetries": 2, "retryBackoffMs": 5000, "outputTailBytes": 4096}`; only `argv` is
/// required. Each argument is used as one word (no shell splitting) after its placeholders
/// are replaced: [`SESSION_PLACEHOLDER`], [`PROMPT_PLACEHOLDER`], [`ENDPOINT_PLACEHOLDER`].
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LaunchConfig {
    /// The command and its arguments (at least the command).
    pub argv: Vec<String>,
    /// How long a launched agent may run before its whole process tree is killed, in
    /// milliseconds (default 30 minutes).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// How many launched agents may run at once in one process (default 2); a reminder due
    /// while the cap is reached waits for a slot.
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent: usize,
    /// How many more times a command that failed to start is tried (default 2). A command that
    /// started is never started again for the same occurrence, whatever its outcome.
    #[serde(default = "default_start_retries")]
    pub start_retries: u32,
    /// The wait before each retry, doubled after each one, in milliseconds (default 5000).
    #[serde(default = "default_retry_backoff_ms")]
    pub retry_backoff_ms: u64,
    /// How many bytes of the end of the agent's output are recorded (default 4096).
    #[serde(default = "default_output_tail_bytes")]
    pub output_tail_bytes: usize,
}

const fn default_timeout_ms() -> u64 {
    30 * 60 * 1000
}
const fn default_max_concurrent() -> usize {
    2
}
const fn default_start_retries() -> u32 {
    2
}
const fn default_retry_backoff_ms() -> u64 {
    5000
}
const fn default_output_tail_bytes() -> usize {
    4096
}

impl LaunchConfig {
    /// Decodes and checks a `launch` object.
    ///
    /// # Errors
    /// [`ServeError::Config`] `launch: <reason>` for an unknown key, a wrong type, an empty
    /// `argv` or command, a zero `timeoutMs` or `maxConcurrent`.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, ServeError> {
        let config: Self = serde_json::from_value(value.clone())
            .map_err(|error| ServeError::Config(format!("launch: {error}")))?;
        config.validate()?;
        Ok(config)
    }

    /// The checks of [`LaunchConfig::from_json`].
    ///
    /// # Errors
    /// As [`LaunchConfig::from_json`].
    pub fn validate(&self) -> Result<(), ServeError> {
        let bad = |reason: &str| Err(ServeError::Config(format!("launch: {reason}")));
        match self.argv.first() {
            None => bad("argv names no command"),
            Some(command) if command.is_empty() => bad("argv's command is empty"),
            Some(_) if self.timeout_ms == 0 => bad("timeoutMs must be at least 1"),
            Some(_) if self.max_concurrent == 0 => bad("maxConcurrent must be at least 1"),
            Some(_) => Ok(()),
        }
    }

    /// The timeout as a duration.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The arguments with the placeholders of one launch replaced.
    pub fn expand(&self, vars: &LaunchVars<'_>) -> Vec<String> {
        self.argv
            .iter()
            .map(|arg| {
                arg.replace(SESSION_PLACEHOLDER, vars.session)
                    .replace(ENDPOINT_PLACEHOLDER, vars.endpoint)
                    .replace(PROMPT_PLACEHOLDER, vars.prompt)
            })
            .collect()
    }
}

/// The values of the placeholders for one launch.
#[derive(Clone, Copy, Debug)]
pub struct LaunchVars<'a> {
    /// The session id.
    pub session: &'a str,
    /// The reminder text.
    pub prompt: &'a str,
    /// The session's MCP endpoint.
    pub endpoint: &'a str,
}

/// `argv` as one `bash -c` command line that runs exactly those words: `exec` then each word
/// in single quotes (a `'` inside becomes `'\''`), so nothing in a word (the reminder text
/// included) is read by the shell.
pub(crate) fn command_line(argv: &[String]) -> String {
    let mut line = String::from("exec");
    for word in argv {
        line.push_str(" '");
        line.push_str(&word.replace('\'', "'\\''"));
        line.push('\'');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_reaches_the_command_as_written_whatever_it_holds() {
        let argv = vec![
            "printf".to_owned(),
            "%s|".to_owned(),
            "it's $(rm -rf /) `x` \"q\"\n".to_owned(),
        ];
        assert_eq!(
            command_line(&argv),
            "exec 'printf' '%s|' 'it'\\''s $(rm -rf /) `x` \"q\"\n'"
        );
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(command_line(&argv))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "it's $(rm -rf /) `x` \"q\"\n|"
        );
    }

    #[test]
    fn placeholders_are_replaced_in_every_word_and_the_config_is_checked() {
        let config = LaunchConfig::from_json(&serde_json::json!({
            "argv": ["agent", "--session={session}", "{prompt}", "{endpoint}/x"]
        }))
        .unwrap();
        assert_eq!(config.timeout_ms, 1_800_000);
        assert_eq!(config.max_concurrent, 2);
        let vars = LaunchVars {
            session: "s1",
            prompt: "check {session}",
            endpoint: "/srv/sessions",
        };
        assert_eq!(
            config.expand(&vars),
            [
                "agent",
                "--session=s1",
                "check {session}",
                "/srv/sessions/x"
            ]
        );
        let refused = |value: serde_json::Value| match LaunchConfig::from_json(&value) {
            Err(ServeError::Config(message)) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            refused(serde_json::json!({"argv": []})),
            "launch: argv names no command"
        );
        assert_eq!(
            refused(serde_json::json!({"argv": ["a"], "maxConcurrent": 0})),
            "launch: maxConcurrent must be at least 1"
        );
        assert!(
            refused(serde_json::json!({"argv": ["a"], "retries": 1}))
                .starts_with("launch: unknown field `retries`")
        );
    }
}
