// Package proc holds what callon's long-running loops share and that is
// no one's domain: the name a process takes in leases (NewOwner), waits
// after failures (Backoff) and between polls (Jitter), the
// claim-a-batch-then-wait loop of the background senders (Drain), and
// sizes in bytes for people (ByteSize). It imports only the standard
// library, so the core may use it.
package proc
