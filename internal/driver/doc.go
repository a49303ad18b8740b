// Package driver runs agents: one Agent per live session with its inbox,
// status and cancellation; the turn/step loop with its hook chains; the tool
// scheduler bridge; approvals and questions; and the Manager that loads,
// resumes and unloads agents.
//
// It follows the lifecycle of the DeepSeek Harness seed documents
// (upstream-core §2–§4) with two deliberate differences: input that arrives
// while the driver goes idle is always claimed or starts a new driver (the
// check and the status flip happen under one lock), and a waking input that
// arrives during a turn that ends blocked or in error still runs afterwards.
package driver
