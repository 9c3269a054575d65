package clickhouse

// ParseURL exposes parseURL to the tests: it returns the database and the
// address the driver would dial.
func ParseURL(rawURL string) (db string, addrs []string, err error) {
	opts, db, err := parseURL(rawURL)
	if err != nil {
		return "", nil, err
	}
	return db, opts.Addr, nil
}

// SetMaxBatchRows changes the split size of writes; it returns a function
// restoring the old one.
func SetMaxBatchRows(n int) (restore func()) {
	old := maxBatchRows
	maxBatchRows = n
	return func() { maxBatchRows = old }
}
