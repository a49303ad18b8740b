package llm

import "context"

// Run streams req through p and guarantees the stream seen by emit ends with
// exactly one finish chunk and nothing after it. A provider failure (a
// *Failure or any other error, which becomes code UNKNOWN) is turned into
// finish{error, failure}, or finish{aborted} with code ABORTED when ctx is
// done, and Run returns nil. An error returned by emit itself means the
// consumer stopped the stream; Run returns it as is.
func Run(ctx context.Context, p Provider, req Request, emit Emit) error {
	var (
		finished bool
		emitErr  error
	)
	guarded := func(c Chunk) error {
		if finished {
			return nil // nothing follows finish
		}
		if c.Type == ChunkFinish {
			finished = true
		}
		if err := emit(c); err != nil {
			emitErr = err
			return err
		}
		return nil
	}

	var err error
	if p == nil {
		err = Errorf(CodeNoProvider, "no model provider configured")
	} else {
		err = p.Stream(ctx, req, guarded)
	}
	switch {
	case emitErr != nil:
		return emitErr
	case finished:
		return nil
	case err == nil:
		// A provider that returned without finishing ended normally.
		return emit(Finish(FinishStop, nil))
	}

	f := AsFailure(err)
	if ctx.Err() != nil || f.Code == CodeAborted {
		aborted := *f
		if aborted.Code != CodeAborted {
			aborted = Failure{Code: CodeAborted, Message: "request cancelled"}
		}
		return emit(Finish(FinishAborted, &aborted))
	}
	return emit(Finish(FinishError, f))
}
