//! The `uop` command-line tool; see `uop --help` and the README.

fn main() -> std::process::ExitCode {
    uop::cli::main()
}
