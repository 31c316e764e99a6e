//! An echo tool and a call helper, shared by the registry suite and the span test binary.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use turnkit_core::{Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, ToolRegistry};

pub(crate) struct Echo(ToolDefinition);

#[async_trait]
impl Tool for Echo {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        if call.arguments["fail"] == json!(true) {
            return Err(ToolError::msg("it failed"));
        }
        Ok(ToolOutput::json(call.arguments))
    }
}

pub(crate) fn echo(name: &str) -> Arc<dyn Tool> {
    Arc::new(Echo(ToolDefinition {
        name: name.to_owned(),
        description: "echo".to_owned(),
        input_schema: json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}),
        output_schema: None,
        annotations: None,
    }))
}

pub(crate) async fn run(registry: &ToolRegistry, name: &str, args: Value) -> ToolOutput {
    registry
        .execute(name, args, None, CancellationToken::new())
        .await
}
