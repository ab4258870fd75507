// A test program that crashes says where. Linked into every test executable (the object
// library stoke_crash_report, cmake/StokeTesting.cmake): a fatal signal (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGABRT) prints the signal and the stack, each frame of the program itself
// resolved to its function, file and line by addr2line (binutils), then the signal is raised
// again with its default action, so ctest still sees the crash. A crash that happens only on
// another machine (a CI run) then leaves its stack in the log. Not installed under a
// sanitizer, whose runtime prints its own report.
#include <dlfcn.h>
#include <execinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "sanitizers.hpp"

namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kMostFrames = 64;

/// Writes `text` to standard error without buffering (async-signal-safe).
void say(const char* text) {
  const std::size_t length = std::strlen(text);
  ssize_t ignored = ::write(STDERR_FILENO, text, length);
  (void)ignored;
}

/// Runs `addr2line -C -f -i -p -e <program> <offsets>` for the frames of the program itself
/// (`frames` given as offsets from its load address) and waits for it.
void resolve(const char* program, char offsets[][24], int count) {
  const char* arguments[kMostFrames + 8] = {"addr2line", "-C", "-f", "-i", "-p", "-e", program};
  int used = 7;
  for (int i = 0; i < count; ++i) arguments[used++] = offsets[i];
  arguments[used] = nullptr;
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::execvp("addr2line", const_cast<char* const*>(arguments));
    say("stoke crash report: addr2line (binutils) is not installed; raw frames above\n");
    ::_exit(127);
  }
  if (child > 0) {
    int status = 0;
    ::waitpid(child, &status, 0);
  }
}

/// The handler: the signal, the raw frames, the program's frames resolved, then the default
/// action of the signal.
void report(int signal) {
  char line[160];
  std::snprintf(line, sizeof line, "\nstoke crash report: fatal signal %d (%s); the stack:\n",
                signal, ::strsignal(signal));
  say(line);
  void* frames[kMostFrames];
  const int count = ::backtrace(frames, kMostFrames);
  ::backtrace_symbols_fd(frames, count, STDERR_FILENO);

  // The program's own frames, as offsets from where it was loaded (a position-independent
  // executable), for addr2line.
  Dl_info self{};
  static char program[4096];
  const ssize_t length = ::readlink("/proc/self/exe", program, sizeof program - 1);
  if (length > 0 && ::dladdr(reinterpret_cast<void*>(&report), &self) != 0) {
    program[length] = '\0';
    static char offsets[kMostFrames][24];
    int resolved = 0;
    // Frame 0 is this handler and the next is the C library's signal return; the frame after
    // it is where the signal came (its address exact), every later one a return address (the
    // call is the instruction before it).
    bool signal_frame_seen = false;
    bool exact = false;
    for (int i = 1; i < count; ++i) {
      Dl_info frame{};
      const bool in_program = ::dladdr(frames[i], &frame) != 0 && frame.dli_fbase == self.dli_fbase;
      if (!in_program) {
        exact = !signal_frame_seen;
        signal_frame_seen = true;
        continue;
      }
      const auto offset = reinterpret_cast<std::uintptr_t>(frames[i]) -
                          reinterpret_cast<std::uintptr_t>(self.dli_fbase) - (exact ? 0 : 1);
      exact = false;
      std::snprintf(offsets[resolved++], sizeof offsets[0], "0x%zx",
                    static_cast<std::size_t>(offset));
    }
    say("stoke crash report: the program's frames (addr2line):\n");
    resolve(program, offsets, resolved);
  }
  std::signal(signal, SIG_DFL);  // already reset (SA_RESETHAND); said for the reader
  std::raise(signal);
}

/// Installs the handler for every fatal signal before main (static initialisation).
[[maybe_unused]] const bool installed = [] {
  if constexpr (stoke::testing::under_thread_sanitizer || stoke::testing::under_address_sanitizer) {
    return false;
  }
  // Its own stack (for the main thread), so that a stack overflow is reported too.
  static char alternate_stack[64 * 1024];
  stack_t stack{};
  stack.ss_sp = alternate_stack;
  stack.ss_size = sizeof alternate_stack;
  ::sigaltstack(&stack, nullptr);
  struct sigaction action{};
  action.sa_handler = report;
  action.sa_flags = static_cast<int>(SA_ONSTACK | SA_RESETHAND);
  for (const int signal : kFatalSignals) ::sigaction(signal, &action, nullptr);
  return true;
}();

}  // namespace
