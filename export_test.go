package millrace

import "time"

// SetClock makes the clients made from cfg read time from now instead of
// time.Now: a host whose clock is skewed, for the tests that show the
// server's clock decides (TestSkewedClocksDecideNothing).
func SetClock(cfg *Config, now func() time.Time) { cfg.clock = now }
