// The comm_report command line as a function, so that a binary can register
// its programs first (registration is explicit, see STYLE.md;
// examples/report/comm_report_main.cc registers the example programs):
//   int main(int argc, char** argv) {
//     my_project::register_report_programs();        // register_report_program(...)
//     return dtensor::debug::comm_report_cli(argc, argv);
//   }
#pragma once

namespace dtensor::debug {

/// Parses the flags (run with --help for the list), runs the program on the
/// fake world or in solo mode, writes the report (markdown to stdout unless
/// --markdown), and with --expect GOLDEN compares it with a golden file
/// (--update rewrites GOLDEN instead). Returns the exit status: 0 ok or
/// matches, 1 golden mismatch (a readable diff on stderr), 2 usage or run error.
int comm_report_cli(int argc, char** argv);

}  // namespace dtensor::debug
