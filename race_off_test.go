//go:build !race

package workerpool

const raceDetectorOn = false
