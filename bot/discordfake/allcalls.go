package discordfake

import "maps"

// AllCalls returns how many requests each route has had so far, failed
// and rate-limited ones included.
func (s *Server) AllCalls() map[Route]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}
