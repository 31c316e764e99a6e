//! The tools an MCP server's tasks build on, named by the families that own them: a task for a
//! job reads its final output and is cancelled through the tool-jobs tools, and a task for a
//! reminder opens on the schedule family's create tool.

/// `job_output`: a task's final output of its job; a call with `wait: true` may become a task.
pub const JOB_OUTPUT_TOOL: &str = turnkit_tool_jobs::JOB_OUTPUT;

/// `job_kill`: what `tasks/cancel` of a job's task does.
pub const JOB_KILL_TOOL: &str = turnkit_tool_jobs::JOB_KILL;

/// `schedule_create`: a call that creates a reminder may open a task for it.
pub const REMINDER_CREATE_TOOL: &str = turnkit_schedule::tools::CREATE_NAME;
