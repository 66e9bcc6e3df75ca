package master

// TaskRef names one attempt of a task: the attempt number is the fencing
// token every guarded write of a worker carries.
type TaskRef struct {
	ID      int64
	Attempt int
}

// Completion is a worker's outcome for one attempt of a task, for
// writing several at once.
type Completion struct {
	Task    TaskRef
	Outcome Outcome
	// SessionID is the task's session, when the caller knows it: the
	// store may then hand the completion's wake to this process's own
	// listeners at once. It decides nothing else (the row does).
	SessionID int64
}
