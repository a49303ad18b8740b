// Package driver runs agents: one Agent per live session with its inbox,
// status and cancellation; the turn/step loop with its hook chains; the tool
// scheduler bridge; approvals and questions; and the Manager that loads,
// resumes and unloads agents.
//
// It follows the lifecycle of the DeepSeek Harness seed documents
// (upstream-core §2–§4). Input that arrives while the driver goes idle is
// always claimed or starts a new driver (the check and the status flip
// happen under one lock, closing upstream's known race). After a turn that
// was stopped, blocked or failed the queue stays parked until the next
// waking input, as upstream. The deliberate differences are written down,
// each with its reason and tests, in docs/lifecycle.md.
package driver
