package vikunja

import (
	"encoding/json"
	"errors"
	"time"
)

// wireTask is the part of Vikunja's task JSON the adapter reads. Missing
// and null fields read as zero values.
type wireTask struct {
	ID          int64       `json:"id"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	Done        bool        `json:"done"`
	ProjectID   int64       `json:"project_id"`
	Identifier  string      `json:"identifier"`
	Index       int64       `json:"index"`
	Labels      []wireLabel `json:"labels"`
	Updated     time.Time   `json:"updated"`
	Created     time.Time   `json:"created"`
	// Comments and CommentCount are answered when a list asks to expand
	// them: the first comments (MaxPerPage at most) and how many there are.
	Comments     []wireComment `json:"comments"`
	CommentCount *int          `json:"comment_count"`
}

type wireLabel struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
}

type wireComment struct {
	ID      int64     `json:"id"`
	Comment string    `json:"comment"`
	Author  *wireUser `json:"author"`
	Created time.Time `json:"created"`
}

type wireUser struct {
	Username string `json:"username"`
	Name     string `json:"name"`
}

var errNoID = errors.New("task without an id")

// decodeTask reads one task. It never panics: anything that isn't a task
// object with an id is an error.
func decodeTask(b []byte) (wireTask, error) {
	var w wireTask
	if err := json.Unmarshal(b, &w); err != nil {
		return wireTask{}, err
	}
	if w.ID <= 0 {
		return wireTask{}, errNoID
	}
	return w, nil
}

// decodeTasks reads a list of tasks; null reads as none.
func decodeTasks(b []byte) ([]wireTask, error) {
	var ws []wireTask
	if err := json.Unmarshal(b, &ws); err != nil {
		return nil, err
	}
	for _, w := range ws {
		if w.ID <= 0 {
			return nil, errNoID
		}
	}
	return ws, nil
}
