//! Logging to standard error and, with `--otlp-endpoint` on a binary built with the `otlp`
//! feature, span export over OTLP/HTTP (protobuf) to a collector.

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// What must happen before the process exits: the exporter's last batch is sent.
pub(crate) struct Telemetry {
    #[cfg(feature = "otlp")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Telemetry {
    /// Installs the global subscriber: the `RUST_LOG` filter (default `warn`) on standard error,
    /// and, when `otlp_endpoint` is given, every span of the harness crates at `INFO` and above
    /// exported to it.
    ///
    /// `otlp_endpoint` is the collector's base URL (`http://localhost:4318`, as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`): spans are posted to its `/v1/traces`; a URL already
    /// ending in `/v1/traces` is used as it is.
    ///
    /// # Errors
    /// The endpoint is not a URL the exporter accepts, or the binary was built without the
    /// `otlp` feature.
    pub(crate) fn install(otlp_endpoint: Option<&str>) -> anyhow::Result<Self> {
        let stderr = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(
                EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
            );
        let registry = tracing_subscriber::registry().with(stderr);
        let Some(endpoint) = otlp_endpoint else {
            registry.init();
            return Ok(Self {
                #[cfg(feature = "otlp")]
                provider: None,
            });
        };
        #[cfg(feature = "otlp")]
        {
            let (provider, layer) = otlp::layer(endpoint)?;
            registry.with(layer).init();
            Ok(Self {
                provider: Some(provider),
            })
        }
        #[cfg(not(feature = "otlp"))]
        {
            registry.init();
            anyhow::bail!(
                "this harness binary was built without the OTLP exporter, so --otlp-endpoint \
                 {endpoint} cannot be used; build it with `--features otlp` (cargo install \
                 turnkit-cli --features otlp)"
            )
        }
    }

    /// Sends the spans still queued and stops the exporter (a no-op without one). A collector
    /// that cannot be reached is reported on standard error; the command's outcome stands.
    pub(crate) fn shutdown(self) {
        #[cfg(feature = "otlp")]
        if let Some(provider) = self.provider
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!("harness: exporting the last spans failed: {error}");
        }
    }
}

#[cfg(feature = "otlp")]
mod otlp {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing::Subscriber;
    use tracing_subscriber::Layer;
    use tracing_subscriber::registry::LookupSpan;

    /// The spans exported: the harness crates' own (`turnkit_*` targets), `INFO` and above.
    fn exported(metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target().starts_with("turnkit") && *metadata.level() <= tracing::Level::INFO
    }

    /// The traces URL of a collector's base URL (`/v1/traces` appended unless present).
    pub(super) fn traces_url(endpoint: &str) -> String {
        let base = endpoint.trim_end_matches('/');
        if base.ends_with("/v1/traces") {
            base.to_owned()
        } else {
            format!("{base}/v1/traces")
        }
    }

    /// The tracer provider (batching, service name `harness`) and the layer feeding it.
    pub(super) fn layer<S>(
        endpoint: &str,
    ) -> anyhow::Result<(SdkTracerProvider, impl Layer<S> + Send + Sync)>
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let url = traces_url(endpoint);
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .build()
            .map_err(|error| anyhow::anyhow!("--otlp-endpoint {endpoint}: {error}"))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                Resource::builder()
                    .with_service_name("harness")
                    .with_attribute(opentelemetry::KeyValue::new(
                        "service.version",
                        env!("CARGO_PKG_VERSION"),
                    ))
                    .build(),
            )
            .build();
        let tracer = provider.tracer("harness");
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(tracing_subscriber::filter::filter_fn(exported));
        Ok((provider, layer))
    }

    #[cfg(test)]
    mod tests {
        use super::traces_url;

        #[test]
        fn a_base_url_gains_the_traces_path_once() {
            assert_eq!(
                traces_url("http://127.0.0.1:4318"),
                "http://127.0.0.1:4318/v1/traces"
            );
            assert_eq!(
                traces_url("http://127.0.0.1:4318/"),
                "http://127.0.0.1:4318/v1/traces"
            );
            assert_eq!(
                traces_url("http://c:4318/v1/traces"),
                "http://c:4318/v1/traces"
            );
        }
    }
}
