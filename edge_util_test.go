package workerpool

import "runtime"

func runtimeGosched() { runtime.Gosched() }
