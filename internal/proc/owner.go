package proc

import (
	"crypto/rand"
	"fmt"
	"os"
)

// NewOwner names this process in the leases it takes (master, tasks,
// outbox claims) and its liveness lock: host, pid and a random suffix,
// unique per process and readable in rows.
func NewOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "callon"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), rand.Text()[:6])
}
