package workerpool

// The reasons the sizer gives for its decisions (Status.SizeReason).
var reasonStart = "start"
