"""`python -m tf_forget ...`: the `tf-forget` command (`tf_forget.commands.tf_forget_main`)."""

from tf_forget.commands import tf_forget_main

if __name__ == "__main__":
  tf_forget_main.console_main()
