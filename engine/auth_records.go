package engine

// AuthRecords returns the records of the access-control list (package
// acl) kept in the engine's metadata, by name. They are opaque to the
// engine, and replicate with the rest of its metadata.
func (e *Engine) AuthRecords() (map[string][]byte, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	return e.meta.AuthRecords()
}

// PutAuthRecord stores the access-control record name; it is on disk
// when PutAuthRecord returns.
func (e *Engine) PutAuthRecord(name string, rec []byte) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	return e.meta.PutAuthRecord(name, rec)
}

// DeleteAuthRecord deletes the access-control record name.
func (e *Engine) DeleteAuthRecord(name string) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	return e.meta.DeleteAuthRecord(name)
}
