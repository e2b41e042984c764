package workerpoolotel

import (
	"fmt"

	"github.com/e86d9661/workerpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of an exception event, as the OpenTelemetry semantic
// conventions name them.
const (
	exceptionEvent      = "exception"
	exceptionType       = "exception.type"
	exceptionMessage    = "exception.message"
	exceptionStacktrace = "exception.stacktrace"
)

// endSpan ends the span of a run that ended with err; pe is err's
// *workerpool.PanicError if it has one. A run that returned nil leaves
// the status unset, as OpenTelemetry asks of instrumentation libraries. A
// failed run gets the status Error with err's message, and an exception
// event: for a panic, the event says what the task panicked with, and
// carries the stack the pool took as it panicked; for any other error
// (runtime.Goexit's workerpool.ErrGoexit included), it is
// span.RecordError's.
func endSpan(span trace.Span, err error, pe *workerpool.PanicError) {
	switch {
	case err == nil || !span.IsRecording():
	case pe != nil:
		span.AddEvent(exceptionEvent, trace.WithAttributes(
			attribute.String(exceptionType, fmt.Sprintf("%T", pe.Value)),
			attribute.String(exceptionMessage, fmt.Sprint(pe.Value)),
			attribute.String(exceptionStacktrace, string(pe.Stack)),
		))
		span.SetStatus(codes.Error, err.Error())
	default:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
