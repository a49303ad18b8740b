package service

// SetImportFault makes Import call fn(id, step) at each of its steps
// ("begun", "seeded", "stored", "loaded") and fail with its error; nil
// removes it.
func SetImportFault(s *Service, fn func(id, step string) error) {
	if fn == nil {
		importFaults.Delete(s)
		return
	}
	importFaults.Store(s, fn)
}
