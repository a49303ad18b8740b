package service

// SetImportFault makes Import call fn(id, stage) at its stages ("seeded",
// "stored") and fail with its error; nil removes it.
func SetImportFault(s *Service, fn func(id, stage string) error) {
	if fn == nil {
		importFaults.Delete(s)
		return
	}
	importFaults.Store(s, fn)
}
