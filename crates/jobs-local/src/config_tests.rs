//! C-041: configuration validation.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn max(value: f64) -> Result<JobLimits, ConfigError> {
    JobsConfig {
        max_concurrent_jobs_per_owner: value,
        ..JobsConfig::default()
    }
    .limits()
}

#[test]
fn c041_invalid_caps_are_rejected() {
    let cases = [
        (0.0, "0"),
        (-1.0, "-1"),
        (1.5, "1.5"),
        (f64::NAN, "null"),
        (f64::INFINITY, "null"),
        (9_007_199_254_740_992.0, "9007199254740992"),
    ];
    for (value, shown) in cases {
        assert_eq!(
            max(value),
            Err(ConfigError::Invalid(format!(
                "jobs-local: maxConcurrentJobsPerOwner must be an integer from 1 to 9007199254740991, got {shown}"
            )))
        );
    }
}

#[test]
fn c041_the_largest_safe_integer_loads() {
    assert_eq!(
        max(9_007_199_254_740_991.0).map(|l| l.max_concurrent_jobs_per_owner),
        Ok(9_007_199_254_740_991)
    );
}

#[test]
fn defaults_and_json_keys() {
    let config: JobsConfig = serde_json::from_value(json!({})).unwrap();
    assert_eq!(config.limits(), Ok(JobLimits::default()));
    let config: JobsConfig =
        serde_json::from_value(json!({"maxConcurrentJobsPerOwner": 2, "outputHistoryBytes": 0}))
            .unwrap();
    assert_eq!(
        config.limits(),
        Ok(JobLimits {
            max_concurrent_jobs_per_owner: 2,
            output_history_bytes: 0,
            journal: false,
        })
    );
    let config: JobsConfig = serde_json::from_value(json!({"journal": true})).unwrap();
    assert_eq!(config.limits(), Ok(JobLimits::default().with_journal(true)));
    let wrong = serde_json::from_value::<JobsConfig>(json!({"journal": 1})).unwrap_err();
    assert!(wrong.to_string().contains("expected a boolean"), "{wrong}");
    let unknown = serde_json::from_value::<JobsConfig>(json!({"maxJobs": 2})).unwrap_err();
    assert!(
        unknown.to_string().contains("unknown field `maxJobs`"),
        "{unknown}"
    );
    let from_json = serde_json::from_value::<JobsConfig>(
        json!({"maxConcurrentJobsPerOwner": 9007199254740992u64}),
    )
    .unwrap()
    .limits();
    assert_eq!(
        from_json.unwrap_err().to_string(),
        "jobs-local: maxConcurrentJobsPerOwner must be an integer from 1 to 9007199254740991, got 9007199254740992"
    );
    assert_eq!(
        JobsConfig {
            output_history_bytes: -1.0,
            ..JobsConfig::default()
        }
        .limits(),
        Err(ConfigError::Invalid(
            "jobs-local: outputHistoryBytes must be an integer from 0 to 9007199254740991, got -1"
                .to_owned()
        ))
    );
}
