// Package verdict is the verdict on offsets: the statuses and ClassifyDrift (one cell's
// drift), the cells and rows a check reports and Judge, the packed rows watch keeps, and the
// exit decision of a report (ExitCode). It decides; package survey gathers what it judges.
package verdict
